"""The trade-off chart and the latency tables in Debian's Chromium, driven by Playwright against a
live server: /concurrency/ draws throughput per GPU against tok/s per user for the H200's
concurrency result (pixels on the canvas, no console error), with its table and the latency of
each level; a run's page shows its latency per point. Screenshots go to
test-artifacts/screenshots/ as for the other browser tests.
"""

from __future__ import annotations

import pytest

from tests.support.h200_results import CONCURRENCY_LEVELS, load_h200_concurrency
from tests.system import test_browser
from tests.system.test_browser import shoot

pytestmark = [pytest.mark.browser]

# test_browser.py's Chromium and its page (which fails a test on any console error).
browser = test_browser.browser
page = test_browser.page


@pytest.fixture
def h200_site(transactional_db, user):
    hardware, runs = load_h200_concurrency(owner=user)
    return {"hardware": hardware, "runs": runs}


def test_the_concurrency_page_draws_the_trade_off_and_lists_latency_by_level(
    live_server, page, h200_site
):
    hardware = h200_site["hardware"].slug
    target = h200_site["runs"][1].config.target_name
    page.goto(f"{live_server.url}/concurrency/?target={target}&hardware={hardware}")
    canvas = page.locator("#pareto-chart")
    canvas.scroll_into_view_if_needed()
    assert canvas.get_attribute("data-drawn") == "true"
    assert canvas.evaluate(test_browser.PAINTED_PIXELS) > 1000
    # A row per config and level in the table beside it. These H200 rows are kept off the
    # ranking (their outputs collapsed: degenerate), so none is on the frontier: each says why.
    rows = page.locator("#pareto-table tbody tr")
    assert rows.count() == 2 * len(CONCURRENCY_LEVELS)
    assert page.locator("#pareto-table .badge", has_text="on the frontier").count() == 0
    kept_off = page.locator("#pareto-table td", has_text="kept off the ranking")
    assert kept_off.count() == rows.count()
    latency = page.locator("#concurrency-latency-table tbody tr")
    assert latency.count() == 2 * len(CONCURRENCY_LEVELS)
    assert (
        "p50 / p90 / p99" in page.locator("#concurrency-latency-table thead").inner_text().lower()
    )
    # Seven columns of percentiles fit the page: no sideways scroll at desktop width.
    wrap = page.locator("#latency .table-wrap")
    assert wrap.evaluate("el => el.scrollWidth - el.clientWidth") <= 0
    page.locator("#pareto").scroll_into_view_if_needed()
    shoot(page, "concurrency-pareto")
    # The section alone, to look at the chart without scrolling a whole page's image.
    page.locator("#pareto").screenshot(path=test_browser.SCREENSHOTS / "pareto-section.png")
    page.locator("#latency").screenshot(path=test_browser.SCREENSHOTS / "latency-section.png")

    run = h200_site["runs"][1]
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    table = page.locator("#latency table")
    assert table.locator("tbody tr").count() == 1 + len(CONCURRENCY_LEVELS)
    assert (
        page.locator("#latency .table-wrap").evaluate("el => el.scrollWidth - el.clientWidth") <= 0
    )
    shoot(page, "run-latency")
    page.locator("#latency").screenshot(path=test_browser.SCREENSHOTS / "run-latency-section.png")
