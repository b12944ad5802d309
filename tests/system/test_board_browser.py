"""The board read at a glance, in Debian's Chromium against a live server, at 1440 and 390 px.

A board built like the demo's: real measured rows (the H200 result files) on two GPU kinds, and
the tiny random-weight models' rows (test weights, one of them degenerate) kept off the ranking.
Each test takes its screenshots (test-artifacts/screenshots/board-*.png) and asserts what a person
sees in them: one table per workload under its heading with the baseline as its denominator, the
columns a phone keeps on screen, whole badges, no sideways scroll at desktop width, the downloads
linked and parsable, and the front page's answer per GPU and target above the fold.
"""

from __future__ import annotations

import csv
import io
import re

import pytest

from leaderboard import services
from leaderboard.services.board import mark_test_weights
from tests.support.baselines import with_baseline_section
from tests.support.h200_results import NMAX_FILES, load_h200_results
from tests.support.measured_configs import degenerate_result, measure, quick_config
from tests.support.protocol_results import categories_config, category_records, protocol_result
from tests.support.protocol_runs import (
    CATEGORIES,
    CATEGORY_ACCEPTANCE,
    CATEGORY_BASELINE,
    CATEGORY_DECODE,
)
from tests.support.seed_kit import SEED_CSV
from tests.system import test_browser
from tests.system.test_browser import SCREENSHOTS

pytestmark = [pytest.mark.browser]

# test_browser.py's Chromium and its page (which fails a test on any console error).
browser = test_browser.browser
page = test_browser.page

WIDE = {"width": 1440, "height": 900}
NARROW = {"width": 390, "height": 844}


@pytest.fixture
def demo_board(transactional_db, user, models, hardware, make_result, tiny_models):
    """A board like the demo's after its jobs ran: the target's rows on two GPU kinds (tiny-qwen3
    cleared of its test-weights mark, standing in for the real model) on the quick protocol and
    the categories protocol, a degenerate row, the H200 files' synthetic rows and the seed kit's
    self-reported rows kept off, and a draft of test weights (tiny-dflash, still marked) listed
    apart."""
    mark_test_weights(models=[models["tiny-qwen3"]], test_weights=False)
    other = services.register_hardware(gpu_name="NVIDIA RTX 4090", memory_bytes=24 * 2**30)
    for kind, speeds in ((hardware, ([100.0, 104.0], [99.0, 103.0], [60.0, 60.5])),
                         (other, ([70.0, 72.0], [40.0, 41.0]))):  # fmt: skip
        for n_max, decode in zip((4, 3, 2), speeds, strict=False):
            measure(user, kind, make_result, n_max, decode)
    load_h200_results(owner=user, hardware=hardware, files=NMAX_FILES[:2])
    degenerate = services.submit_config(
        owner=user, data=quick_config("ngram-mod", 8), hardware_slug=hardware.slug
    )
    services.record_result(
        job_id=degenerate.pk,
        result=with_baseline_section(
            degenerate_result(make_result, degenerate.config.key, [300.0, 310.0]),
            make_result(degenerate.config.baseline.key, [50.0, 52.0]),
        ),
    )
    directory = next(iter(tiny_models.values())).parent
    for spec in ({"spec_types": ["ngram-mod"], "draft_model": None}, {}):
        config = categories_config(CATEGORIES, **spec)
        services.import_runner_result(
            owner=user,
            hardware=hardware,
            result=protocol_result(
                config,
                category_records(config, CATEGORY_DECODE, CATEGORY_ACCEPTANCE),
                category_records(config.baseline(), CATEGORY_BASELINE, None),
                models_dir=directory,
            ),
            source="test",
        )
    # The seed kit's self-reported rows: long labels, kept off the ranking.
    services.import_leaderboard_csv(content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000")
    return {"hardware": hardware, "other": other}


def shoot_at(page, name: str, size: dict, *, element: str | None = None) -> None:
    """The page (or one element of it) at this width: the whole page, and what the first screen
    shows (board-<name>-fold-<width>.png)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size(size)
    page.wait_for_timeout(150)  # Chart.js redraws on resize.
    width = size["width"]
    if element:
        page.locator(element).screenshot(path=SCREENSHOTS / f"{name}-{width}.png")
        return
    page.screenshot(path=SCREENSHOTS / f"{name}-{width}.png", full_page=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=SCREENSHOTS / f"{name}-fold-{width}.png")


# The widths of a board table and the box it scrolls in, and whether any badge in it is cut:
# wider than its own box, or reaching past the viewport's right edge.
TABLE_FIT = """table => {
  const wrap = table.closest(".table-wrap");
  const cut = [...table.querySelectorAll(".badge")].filter(badge => {
    const box = badge.getBoundingClientRect();
    return badge.offsetParent !== null
      && (badge.scrollWidth > badge.clientWidth + 1 || box.right > window.innerWidth + 0.5);
  }).map(badge => badge.textContent.trim());
  return {table: table.scrollWidth, wrap: wrap.clientWidth, cut: cut};
}"""
# The columns whose header a person sees without scrolling sideways, by their text.
VISIBLE_HEADERS = """table => [...table.querySelectorAll("thead th")].filter(th => {
  const box = th.getBoundingClientRect();
  return th.offsetParent !== null && box.width > 0 && box.left >= 0
    && box.right <= window.innerWidth + 0.5;
}).map(th => th.textContent.replace(/\\s+/g, " ").trim())"""


def test_the_board_is_one_table_per_workload_with_its_baseline_as_the_denominator(
    live_server, page, demo_board
):
    page.goto(live_server.url + "/")
    for size in (WIDE, NARROW):
        shoot_at(page, "board-ranking", size, element="#ranking")
        ranking = page.locator("#ranking")
        sections = ranking.locator("tbody")
        # Three workloads measured by ranked rows: categories on the H200, the quick prompt on
        # the H200 and on the RTX 4090; each its own section headed by what it measured.
        assert sections.count() == 3
        headings = [sections.nth(i).locator("tr.ranking-heading").inner_text() for i in range(3)]
        assert any(h.startswith("categories code, math, translation (3)") for h in headings)
        assert sum(h.startswith("quick, 64 out, prompt") for h in headings) == 2
        assert {h.split(" · ")[-2] for h in headings} == {"H200", "RTX 4090"}
        for index in range(3):
            section = sections.nth(index)
            # The baseline is the denominator line under the heading, with its tok/s; never a
            # ranked row, and its rows are numbered from 1.
            denominator = section.locator("tr.denominator")
            assert denominator.count() == 1 and denominator.is_visible()
            assert re.search(r"Baseline, no drafting: [\d.]+ tok/s", denominator.inner_text())
            ranks = section.locator("td.rank").all_inner_texts()
            assert ranks and ranks[0].startswith("1")
            labels = section.locator("td:nth-child(2) > a").all_inner_texts()
            assert labels and not any("baseline" in label for label in labels)
        # The intro says what a row is in two sentences; each number carries its definition,
        # and the long definitions wait in a collapsed "how is each number measured".
        assert page.locator(".lede").inner_text().count(". ") == 1
        first = ranking.locator("tbody tr:not(.ranking-heading):not(.denominator)").first
        for cell in ("td.num >> nth=0", "td.num >> nth=3"):
            assert len(first.locator(cell).get_attribute("title")) > 20
        legend = page.locator("details.legend-box")
        assert legend.count() == 1 and legend.get_attribute("open") is None
    shoot_at(page, "board-page", WIDE)
    shoot_at(page, "board-page", NARROW)


def test_the_tables_fit_at_1440_and_a_phone_keeps_tok_s_and_speedup_without_cutting_a_badge(
    live_server, page, demo_board
):
    page.goto(live_server.url + "/")
    tables = ("#ranking", "#kept-off-table", "#test-weights-table")
    shoot_at(page, "board-fit", WIDE)
    for selector in tables:
        fit = page.locator(selector).evaluate(TABLE_FIT)
        # No sideways scroll at desktop width: every column, interval, speedup and tau in view.
        assert fit["table"] <= fit["wrap"], (selector, fit)
        assert fit["cut"] == [], (selector, fit)
        headers = page.locator(selector).evaluate(VISIBLE_HEADERS)
        assert {"95% CI", "Speedup", "tau"} <= set(headers), (selector, headers)

    shoot_at(page, "board-fit", NARROW)
    for selector in tables:
        table = page.locator(selector)
        table.scroll_into_view_if_needed()
        # A phone keeps the rank, the config, tok/s and the speedup on screen (the interval and
        # n under tok/s); it leaves out the columns a hover or the config page gives.
        headers = table.evaluate(VISIBLE_HEADERS)
        assert any(h.startswith("tok/s") for h in headers) and "Speedup" in headers, headers
        assert headers[:2] == ["#", "Config and flags"], headers
        assert "tau" not in headers and "n" not in headers
        fit = table.evaluate(TABLE_FIT)
        assert fit["table"] <= fit["wrap"], (selector, fit)
        assert fit["cut"] == [], (selector, fit)
        assert table.locator(".phone-ci").first.is_visible()
    assert page.locator("#kept-off-table .badge", has_text="degenerate").first.is_visible()
    assert page.locator("#ranking .badge.tie").first.is_visible()
    shoot_at(page, "board-kept-off", NARROW, element="#kept-off-table")

    # The config page of the degenerate row: its badges whole at both widths.
    page.locator("#kept-off-table a", has_text="ngram-mod · n_max 8").click()
    page.wait_for_url(re.compile(r"/configs/"))
    for size in (WIDE, NARROW):
        shoot_at(page, "config-degenerate", size)
        for table in ("standing", "runs"):
            shoot_at(page, f"config-{table}", size, element=f"#{table}-table")
        badges = page.locator(".badge", has_text="degenerate")
        assert badges.count() >= 1
        cut = page.evaluate(
            """() => [...document.querySelectorAll(".badge")].filter(badge => {
                 const wrap = badge.closest(".table-wrap");
                 const box = badge.getBoundingClientRect();
                 const edge = wrap ? wrap.getBoundingClientRect().right : window.innerWidth;
                 return badge.offsetParent !== null && (badge.scrollWidth > badge.clientWidth + 1
                   || box.right > Math.min(edge, window.innerWidth) + 0.5);
               }).map(badge => badge.textContent.trim() + " in " + (badge.closest("[id]") || {}).id)"""
        )
        assert cut == [], (size, cut)


def test_the_board_links_csv_and_json_downloads_with_rank_interval_and_fidelity(
    live_server, page, demo_board
):
    page.goto(live_server.url + "/")
    shoot_at(page, "board-downloads", WIDE, element="#downloads")
    csv_link, json_link = page.locator("#download-csv"), page.locator("#download-json")
    assert csv_link.is_visible() and json_link.is_visible()
    shown = {
        label: rank.split()[0]
        for label, rank in zip(
            page.locator("#ranking td:nth-child(2) > a").all_inner_texts(),
            page.locator("#ranking td.rank").all_inner_texts(),
            strict=True,
        )
    }

    download = page.request.get(live_server.url + csv_link.get_attribute("href"))
    assert download.ok and "attachment" in download.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(download.text())))
    columns = set(rows[0])
    assert {"rank", "speedup_ci95_low", "speedup_ci95_high", "fidelity", "lossless"} <= columns
    # The rows the page ranks, each with the rank the page shows, its interval around its
    # speedup and its fidelity verdict (the tiny target's outputs are identical to the baseline).
    assert {row["label"]: row["rank"] for row in rows} == shown
    for row in rows:
        low, speedup, high = (
            float(row[name]) for name in ("speedup_ci95_low", "speedup", "speedup_ci95_high")
        )
        assert low <= speedup <= high
        assert row["fidelity"] in {"identical", "near ties only", "mismatch", "unclassified", ""}
    assert any(row["fidelity"] == "identical" for row in rows) or all(
        row["lossless"] == "True" for row in rows
    )

    body = page.request.get(live_server.url + json_link.get_attribute("href")).json()
    assert {row["label"]: str(row["rank"]) for row in body} == shown
    assert all(
        {"rank", "speedup_ci95_low", "speedup_ci95_high", "fidelity"} <= set(r) for r in body
    )

    # With flagged rows included, the downloads follow: kept-off rows come unranked.
    page.locator("#toggle-flagged").click()
    page.wait_for_url(re.compile(r"all=1"))
    shoot_at(page, "board-everything", WIDE)
    fit = page.locator("#ranking").evaluate(TABLE_FIT)
    assert fit["table"] <= fit["wrap"] and fit["cut"] == [], fit
    every_url = live_server.url + page.locator("#download-json").get_attribute("href")
    every = page.request.get(every_url).json()
    assert len(every) > len(body)
    assert any(row["rank"] is None and row["degenerate"] for row in every)


def test_the_front_page_answers_the_fastest_draft_per_gpu_and_target_above_the_fold(
    live_server, page, demo_board
):
    page.goto(live_server.url + "/")
    for size in (WIDE, NARROW):
        shoot_at(page, "board-front", size)
        shoot_at(page, "board-glance", size, element="#glance")
        page.evaluate("window.scrollTo(0, 0)")
        answers = page.locator("#glance .glance-answer")
        # One answer per GPU with ranked data, both on the first screen of a desktop; a phone's
        # first screen holds the first (each names its workloads in full, so they take lines).
        assert answers.count() == 2
        texts = answers.all_inner_texts()
        assert texts[0].startswith("H200") and texts[1].startswith("RTX 4090")
        for index in range(2 if size is WIDE else 1):
            box = answers.nth(index).bounding_box()
            assert box["y"] + box["height"] <= size["height"], (size, index, box)
        # The answer names every workload where a draft is faster than none, each by its
        # ranking's label, in the labels' order: on the H200 the categories (ngram-mod at 1.25x,
        # not clearly) and the quick prompt (n_max 4 at 2.00x, faster than no draft).
        workloads = answers.nth(0).locator(".glance-workloads > li").all_inner_texts()
        assert len(workloads) == 2, workloads
        assert "1.25×" in workloads[0] and "not clearly faster" in workloads[0]
        assert "\non categories code, math, translation (3)" in workloads[0]
        assert "draft-simple" in workloads[1] and "2.00×" in workloads[1]
        assert "faster than no draft" in workloads[1]
        assert "\non quick, 64 out, prompt" in workloads[1]
        # Nothing in the answers is wider than the screen: no sideways scroll on a phone.
        assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
        best = page.get_by_role("link", name="Best for my GPU →")
        assert best.is_visible() and best.bounding_box()["y"] < size["height"]
    # The draft links to the config that answers; "best for this GPU" asks /best/.
    page.locator("#glance a.glance-draft").first.click()
    page.wait_for_url(re.compile(r"/configs/"))
    assert "n_max 4" in page.locator("h1").inner_text()
    page.go_back()
    page.locator("#glance").get_by_role("link", name="best for this GPU").first.click()
    page.wait_for_url(re.compile(r"/best/\?target=tiny-qwen3&hardware="))

    # The demo says which rows are test weights: apart, under a heading in words, each badged,
    # and none of them in the ranking or the answers.
    page.goto(live_server.url + "/")
    heading = page.locator("#test-weights")
    assert "Test weights, not a real model" in heading.inner_text()
    shoot_at(page, "board-test-weights", NARROW, element="#test-weights-table")
    page.set_viewport_size(WIDE)
    weights = page.locator("#test-weights-table tbody tr:not(.ranking-heading)")
    assert weights.count() == 1
    assert weights.first.locator(".badge", has_text="test weights").is_visible()
    assert page.locator("#ranking .badge", has_text="test weights").count() == 0
    assert "tiny-dflash" not in page.locator("#glance").inner_text()
    assert "test weights" in page.locator("#glance .glance-note").inner_text()
