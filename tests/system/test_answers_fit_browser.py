"""The answers on a phone and a desktop, in Debian's Chromium against a live server.

On the demo-like board of test_board_browser.py: at 390 px the model page's draft tables, /nmax/
and /best/ show the speedup, its interval and the verdict without a sideways scroll; at 1440 px
no table on those pages, the board (its test-weights table too) or /compare/ of three configs
scrolls sideways; a touch screen is never told to hover. Screenshots go to
test-artifacts/screenshots/answers-*.png.
"""

from __future__ import annotations

import pytest

from leaderboard.models import LeaderboardEntry
from tests.support.measured_configs import measure_config
from tests.system import test_board_browser, test_browser
from tests.system.test_board_browser import NARROW, VISIBLE_HEADERS, WIDE, shoot_at

pytestmark = [pytest.mark.browser]

browser = test_browser.browser
page = test_browser.page
demo_board = test_board_browser.demo_board


@pytest.fixture
def board(demo_board, user, make_result):
    """test_board_browser's demo-like board, with what the real demo's test-weights table holds:
    a tiny model's rows whose three requests lie so far apart that their intervals cannot place
    the mean (the interval's longest wording)."""
    data = {
        "target_model": "tiny-mtp.gguf",
        "spec_types": ["ngram-mod"],
        "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
    }
    # Two batches, as the demo's baseline had: the row shows their pooled mean and interval too.
    for spread in ([10.0, 240.0, 15.0], [12.0, 230.0, 20.0]):
        measure_config(user, demo_board["hardware"], make_result, data, spread, baseline=spread)
    return demo_board


# Every table on the page wider than the box it scrolls in (its .table-wrap, else the page).
OVERFLOWING = """() => [...document.querySelectorAll("table")].filter(t => t.offsetParent !== null)
  .map(table => {
    const box = table.closest(".table-wrap") || document.documentElement;
    return {table: table.id || table.className, scroll: table.scrollWidth,
            client: box.clientWidth};
  }).filter(t => t.scroll > t.client)"""


def answer_pages(live_server, board) -> dict[str, str]:
    hardware = board["hardware"].slug
    keys = list(
        LeaderboardEntry.objects.filter(config__target__path="tiny-qwen3.gguf")
        .order_by("-config__protocol", "pk")
        .values_list("config__key", flat=True)[:3]
    )
    assert len(keys) == 3
    return {
        "model": f"{live_server.url}/models/tiny-qwen3/",
        "nmax": f"{live_server.url}/nmax/?target=tiny-qwen3&hardware={hardware}",
        "best": f"{live_server.url}/best/?target=tiny-qwen3&hardware={hardware}",
        "board": f"{live_server.url}/",
        "compare": f"{live_server.url}/compare/?keys={','.join(keys)}",
    }


def test_at_1440_px_no_table_of_the_answers_scrolls_sideways(live_server, page, board):
    for name, url in answer_pages(live_server, board).items():
        page.goto(url)
        shoot_at(page, f"answers-{name}", WIDE)
        assert page.evaluate(OVERFLOWING) == [], name
    assert page.locator("#compare-table thead th").count() == 4
    page.goto(live_server.url + "/")
    weights = page.locator("#test-weights-table")
    assert "too few requests to place the mean" in weights.inner_text()


# Per page: its answer tables, and the headers a phone keeps on screen in each.
ON_A_PHONE = {
    "model": ("table.drafts", {"Its fastest config", "Speedup", "95% interval", "Verdict"}),
    "nmax": ("table.nmax-table", {"n_max", "95% interval", "Speedup", "Config"}),
    "best": ("table.best-table", {"95% interval", "Speedup"}),
    "board": ("#test-weights-table", {"#", "Config and flags", "Speedup"}),
}


def test_at_390_px_the_answers_show_speedup_interval_and_verdict_without_scrolling(
    live_server, page, board
):
    pages = answer_pages(live_server, board)
    for name, (selector, kept) in ON_A_PHONE.items():
        page.goto(pages[name])
        shoot_at(page, f"answers-{name}", NARROW)
        assert page.evaluate(OVERFLOWING) == [], name
        tables = page.locator(selector)
        assert tables.count() >= 1, name
        for index in range(tables.count()):
            table = tables.nth(index)
            table.scroll_into_view_if_needed()
            headers = set(table.evaluate(VISIBLE_HEADERS))
            assert kept <= headers, (name, headers)
    # The verdicts themselves: the draft table's, the n_max sweep's best and its tie, /best/'s.
    page.goto(pages["model"])
    assert page.locator("table.drafts .badge", has_text="fastest here").first.is_visible()
    page.goto(pages["nmax"])
    assert page.locator("table.nmax-table .badge.good", has_text="best").first.is_visible()
    assert page.locator(
        "table.nmax-table .badge.tie:visible", has_text="tied with the best"
    ).count()
    page.goto(pages["best"])
    assert page.locator("table.best-table th", has_text="clearly slower").first.is_visible()
    assert page.locator("#best-answer").is_visible()


def test_a_touch_screen_is_never_told_to_hover(live_server, browser, board):
    phone = browser.new_context(viewport=NARROW, is_mobile=True, has_touch=True)
    desktop = browser.new_context(viewport=WIDE)
    try:
        for path in ("/", "/categories/", "/concurrency/"):
            touch_page = phone.new_page()
            touch_page.goto(live_server.url + path)
            assert "hover" not in touch_page.locator("main").inner_text().lower(), path
        mouse_page = desktop.new_page()
        mouse_page.goto(live_server.url + "/")
        # With a mouse the hover is how a number's definition is read.
        assert "hover a number" in mouse_page.locator("main").inner_text()
    finally:
        phone.close()
        desktop.close()
