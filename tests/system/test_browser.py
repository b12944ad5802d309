"""The pages in Debian's Chromium, driven by Playwright against a live server.

Browse, filter, open a config and see its charts drawn, the n_max, context and compare views,
an invalid then a valid submission followed on its job page to the result. Screenshots of every
page, at desktop and phone widths, go to test-artifacts/screenshots/.

The submission's Celery enqueue is captured (the `enqueued` fixture) and the test plays the
worker through the same services the db worker calls; the real broker, workers and
llama-server are covered end to end by test_end_to_end.py.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from leaderboard import services
from leaderboard.models import Job
from leaderboard.services.board import mark_test_weights
from tests.support.h200_results import load_h200_results
from tests.support.measured_configs import measure

pytestmark = [pytest.mark.browser]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
PASSWORD = "correct-horse-battery"
# Counts the canvas's non-transparent pixels: a drawn chart has thousands, a blank one none.
PAINTED_PIXELS = """canvas => {
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let painted = 0;
  for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) painted++;
  return painted;
}"""

# Playwright's sync API runs an event loop in this thread; the test's own ORM calls are safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    yield page
    context.close()
    assert errors == [], errors


@pytest.fixture
def models(models):
    """The tiny fixture models, cleared of their test-weights mark as an admin could: these tests
    are about the ranking, and test-weight rows never enter it (test_definitions_on_pages)."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


@pytest.fixture
def site(transactional_db, user, models, hardware, enqueued, make_result):
    """Measured configs (two of them tied), a seed CSV import and the H200 results."""
    keys = []
    for n_max, decode in ((4, [100.0, 104.0]), (3, [99.0, 103.0]), (2, [60.0, 60.5])):
        keys.append(measure(user, hardware, make_result, n_max, decode).config.key)
    load_h200_results(owner=user, hardware=hardware)
    return {"keys": keys, "hardware": hardware, "user": user}


def shoot(page, name: str) -> None:
    """Full-page screenshots at desktop and phone width; the page is left at desktop width."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
        page.set_viewport_size(size)
        page.wait_for_timeout(150)  # Chart.js redraws on resize.
        page.screenshot(path=SCREENSHOTS / f"{name}-{label}.png", full_page=True)
    page.set_viewport_size(DESKTOP)


def assert_charts_drawn(page, expected: int) -> None:
    canvases = page.locator("canvas[data-chart-source]")
    assert canvases.count() == expected
    for index in range(expected):
        canvas = canvases.nth(index)
        canvas.scroll_into_view_if_needed()
        assert canvas.get_attribute("data-drawn") == "true"
        assert canvas.evaluate(PAINTED_PIXELS) > 1000
        assert len(canvas.evaluate("c => c.toDataURL()")) > 5000


def test_browse_filter_and_open_a_config_with_its_charts_drawn(live_server, page, site):
    page.goto(live_server.url + "/")
    ranking = page.locator("#ranking")
    # Three speculative configs in one ranking under its heading; their baseline is the
    # denominator, a line under that heading and in its own table, not a ranked row.
    assert ranking.locator("tbody tr.ranking-heading").count() == 1
    assert ranking.locator("tbody tr:not(.ranking-heading):not(.denominator)").count() == 3
    assert ranking.locator("tbody tr.denominator").count() == 1
    assert ranking.locator(".badge.tie").count() == 1
    assert page.locator("#baselines-table tbody tr:not(.ranking-heading)").count() == 1
    assert page.locator("#kept-off-table").get_by_text("synthetic").first.is_visible()
    shoot(page, "leaderboard")

    page.select_option("select[name=spec_type]", "none")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"spec_type=none"))
    assert page.locator("#ranking").count() == 0
    assert page.locator("#baselines-table tbody tr:not(.ranking-heading)").count() == 1
    page.get_by_role("link", name="Include synthetic, self-reported").click()
    page.wait_for_url(re.compile(r"all=1"))
    # Every baseline the filter matches, flagged ones included, and none of them ranked.
    rows = page.locator("#ranking tbody tr:not(.ranking-heading)")
    assert rows.count() == 3
    assert page.locator("#ranking td.rank .baseline-mark").count() == 3

    page.goto(live_server.url + "/")
    page.locator("#ranking").get_by_role("link", name=re.compile("n_max 4")).click()
    page.wait_for_url(re.compile(r"/configs/"))
    # tok/s per run, speedup against extra memory, acceptance by draft position (drawn since
    # the measured fakes carry per-position counts that their summary follows), and the
    # requests by their acceptance.
    assert_charts_drawn(page, 4)
    assert page.locator("canvas[data-chart-source=acceptance-data]").count() == 1
    assert page.locator("canvas[data-chart-source=acceptance-spread-data]").count() == 1
    assert page.locator("#server-command").inner_text().startswith("llama-server")
    shoot(page, "config-measured")

    page.goto(live_server.url + "/configs/8bddd103171a857f/")
    assert_charts_drawn(page, 4)
    shoot(page, "config-h200-27b")
    page.get_by_role("link", name="run 1", exact=True).click()
    page.wait_for_url(re.compile(r"/runs/\d+/"))
    assert page.get_by_role("link", name="requests.csv").is_visible()
    # The run's own requests by their acceptance.
    assert_charts_drawn(page, 1)
    shoot(page, "run")


def test_nmax_context_compare_and_other_pages_draw_and_read_on_a_phone(live_server, page, site):
    page.goto(live_server.url + "/nmax/")
    assert_charts_drawn(page, 1)
    # Two requests a point: the intervals overlap, so the page claims no "lower acceptance,
    # faster" win (the board's tie test) and says why.
    assert "not distinguishable" in page.locator("#no-finding").inner_text()
    shoot(page, "nmax")

    page.goto(live_server.url + "/context/")
    # One chart per target and GPU: the two lines are of different targets.
    assert_charts_drawn(page, 2)
    assert page.locator("#context-table tbody tr").count() == 2
    shoot(page, "context")

    page.goto(live_server.url + "/compare/")
    # The picker takes keys as well as labels (test_charts_browser picks by label).
    for slot, key in enumerate([*site["keys"][:2], "8bddd103171a857f"], start=1):
        page.fill(f"#compare-pick-{slot}", key)
    page.get_by_role("button", name="Compare", exact=True).click()
    page.wait_for_url(re.compile(r"keys="))
    assert_charts_drawn(page, 3)
    assert page.locator("#compare-depth-table").is_visible()
    assert "not distinguishable" in page.locator("#compare-table").inner_text()
    shoot(page, "compare")

    for path, name in (
        ("/hardware/", "hardware-list"),
        (f"/hardware/{site['hardware'].slug}/", "hardware"),
        ("/models/", "models"),
        ("/models/tiny-qwen3/", "model"),
        ("/best/?target=tiny-qwen3&memory_gb=8", "best"),
    ):
        page.goto(live_server.url + path)
        shoot(page, name)
    assert page.locator("#best-answer").get_by_role("link").inner_text().endswith("n_max 4")

    page.set_viewport_size(PHONE)
    page.goto(live_server.url + "/")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, "the page scrolls sideways on a phone"


def test_submit_an_invalid_then_a_valid_config_and_follow_its_job(
    live_server, page, site, make_result
):
    page.goto(live_server.url + "/submit/")
    page.fill("#id_login", site["user"].username)
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/submit/$"))

    page.select_option("#id_target_model", "tiny-qwen3.gguf")
    # The draft field shows once a type that takes a draft is checked.
    page.check("input[name=spec_types][value=draft-dflash]")
    page.select_option("#id_draft_model", "tiny-dflash.gguf")
    page.fill("#id_n_max", "16")
    page.fill("#id_runs", "3")
    page.fill("#id_n_predict", "64")
    page.get_by_role("button", name="Submit").click()
    error = page.locator("#field-n_max .errors")
    assert "out of range for draft-dflash" in error.inner_text()
    shoot(page, "submit-invalid")

    page.fill("#id_n_max", "8")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job = Job.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    assert page.get_by_role("button", name="Cancel job").is_visible()

    # Play the worker: progress events, then the result, through the db worker's services.
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    services.record_progress(
        job_id=job.pk,
        progress={
            "phase": "measuring",
            "done": 1,
            "total": 4,
            "tokens": 64,
            "elapsed_s": 3.0,
            "log_tail": "slot update_slots: id  0 | task 2 | prompt done, n_tokens = 26",
        },  # fmt: skip
    )
    expect(page.locator('[data-field="done"]')).to_have_text("1", timeout=10_000)
    expect(page.locator('[data-field="remaining_s"]')).to_have_text("9")
    # The engine's recent log appears without a reload, as the worker sends it.
    expect(page.locator("#engine-log [data-log]")).to_contain_text("prompt done, n_tokens = 26")
    assert page.locator("#engine-log").is_visible()
    assert page.evaluate("() => document.querySelector('progress').value") == 25
    shoot(page, "job-running")

    result = make_result(job.config.key, [150.0, 151.0, 149.0], draft=(80, 60), tau=3.0)
    services.record_result(job_id=job.pk, result=result)
    page.wait_for_selector("text=the config's page", timeout=10_000)
    assert "succeeded" in page.locator('[data-field="status"]').inner_text()
    assert page.locator("progress").get_attribute("value") == "100"
    shoot(page, "job-done")


# Pixels of the mark charts.js draws where an interval band is cut at 0 (CLIPPED_MARK there).
MARK_PIXELS = """canvas => {
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let marked = 0;
  for (let i = 0; i < data.length; i += 4)
    if (data[i] === 212 && data[i + 1] === 0 && data[i + 2] === 15 && data[i + 3] === 255) marked++;
  return marked;
}"""


def test_an_interval_that_runs_below_zero_is_marked_where_the_chart_cuts_it(
    live_server, page, transactional_db, user, models, hardware, enqueued, make_result
):
    # Two requests far apart: the 95% interval of their mean runs far below 0.
    wide = measure(user, hardware, make_result, 5, [10.0, 60.0]).config.key
    tight = measure(user, hardware, make_result, 4, [100.0, 104.0]).config.key

    page.goto(f"{live_server.url}/compare/?keys={wide},{tight}")
    canvas = page.locator("#compare-tps-chart")
    canvas.scroll_into_view_if_needed()
    assert canvas.get_attribute("data-drawn") == "true"
    chart = "c => { const d = Chart.getChart(c).data; return [d.labels, d.datasets[0].clipped]; }"
    labels, clipped = canvas.evaluate(chart)
    assert [flag for label, flag in zip(labels, clipped, strict=True) if "n_max 5" in label] == [
        True
    ]
    assert [flag for label, flag in zip(labels, clipped, strict=True) if "n_max 4" in label] == [
        False
    ]
    assert canvas.evaluate(MARK_PIXELS) > 20
    # The table says the same in words.
    assert "too few requests to place the mean" in page.locator("#compare-table").inner_text()
    shoot(page, "compare-interval-below-zero")

    # Without such a band, no mark.
    other = measure(user, hardware, make_result, 3, [99.0, 103.0]).config.key
    page.goto(f"{live_server.url}/compare/?keys={tight},{other}")
    canvas = page.locator("#compare-tps-chart")
    canvas.scroll_into_view_if_needed()
    assert canvas.get_attribute("data-drawn") == "true"
    assert canvas.evaluate(chart)[1] == [False, False]
    assert canvas.evaluate(MARK_PIXELS) == 0
