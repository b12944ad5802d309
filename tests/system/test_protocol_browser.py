"""The concurrency and categories views in Debian's Chromium, driven by Playwright against a live
server: /concurrency/ draws its chart (pixels on the canvas, no console error), and a concurrency
config's page draws its own; /categories/ shows its heatmap. Screenshots go to
test-artifacts/screenshots/ as for the other browser tests.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from leaderboard import services
from tests.support.protocol_results import (
    categories_config,
    category_records,
    concurrency_config,
    concurrency_records,
    protocol_result,
)
from tests.system import test_browser
from tests.system.test_browser import shoot

pytestmark = [pytest.mark.browser]

# test_browser.py's Chromium and its page (which fails a test on any console error).
browser = test_browser.browser
page = test_browser.page


@pytest.fixture
def protocol_site(transactional_db, user, models, hardware, tiny_models):
    directory = next(iter(tiny_models.values())).parent
    concurrency = concurrency_config([1, 2, 4, 8])
    categories = categories_config(["code", "math", "translation"])
    results = [
        protocol_result(
            concurrency,
            concurrency_records(concurrency, [100.0, 170.0, 240.0, 260.0], acceptance=0.7),
            concurrency_records(
                concurrency.baseline(), [60.0, 115.0, 210.0, 330.0], acceptance=None
            ),
            models_dir=directory,
            joules_per_request=50.0,
        ),
        protocol_result(
            categories,
            category_records(
                categories,
                {"code": 170.0, "math": 120.0, "translation": 90.0},
                {"code": 0.9, "math": 0.55, "translation": 0.25},
            ),
            category_records(
                categories.baseline(), {"code": 100.0, "math": 100.0, "translation": 100.0}, None
            ),
            models_dir=directory,
        ),
    ]
    for result in results:
        services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    return {"concurrency": concurrency.key, "categories": categories.key, "hardware": hardware}


def test_the_concurrency_view_and_a_concurrency_config_draw_their_charts(
    live_server, page, protocol_site
):
    hardware = protocol_site["hardware"].slug
    page.goto(f"{live_server.url}/concurrency/?target=tiny-qwen3&hardware={hardware}")
    # Aggregate tok/s and the speedup over the paired baseline against concurrency.
    for chart in ("#concurrency-chart", "#concurrency-speedup-chart"):
        canvas = page.locator(chart)
        canvas.scroll_into_view_if_needed()
        assert canvas.get_attribute("data-drawn") == "true"
        assert canvas.evaluate(test_browser.PAINTED_PIXELS) > 1000
    assert page.locator("#concurrency-table td.crossover").count() == 1
    shoot(page, "concurrency")

    page.goto(f"{live_server.url}/configs/{protocol_site['concurrency']}/")
    canvas = page.locator('canvas[data-chart-source="config-concurrency-data"]')
    canvas.scroll_into_view_if_needed()
    assert canvas.get_attribute("data-drawn") == "true"
    assert canvas.evaluate(test_browser.PAINTED_PIXELS) > 1000
    assert page.locator("#config-concurrency-table tr.crossover").count() == 1
    # Every level's tau, derived from its requests (none of which has a tau of its own above 1).
    tau_cells = page.locator("#config-concurrency-table tbody td:nth-last-child(1)")
    assert tau_cells.count() == 4
    assert all(float(cell.split()[0]) > 1 for cell in tau_cells.all_inner_texts())
    # The levels' table fits the page at desktop width: tau is not behind a sideways scroll.
    wrap = page.locator("#config-concurrency-table").locator("xpath=..")
    assert wrap.evaluate("el => el.scrollWidth - el.clientWidth") <= 0
    shoot(page, "config-concurrency")
    # The figure, then the sentence that says what it includes (prefill and idle time).
    energy = page.locator("#joules-per-token").inner_text().strip()
    assert re.match(r"[0-9.]+ J\b", energy) and "prefill" in energy


def test_the_categories_heatmap_and_a_categories_config_page(live_server, page, protocol_site):
    page.goto(f"{live_server.url}/categories/")
    heatmap = page.locator("#category-heatmap")
    assert heatmap.locator("tbody tr").count() == 1
    assert heatmap.locator(".heat.gain-3, .heat.gain-4").count() >= 1
    shoot(page, "categories")

    page.goto(f"{live_server.url}/configs/{protocol_site['categories']}/")
    canvas = page.locator('canvas[data-chart-source="category-data"]')
    canvas.scroll_into_view_if_needed()
    assert canvas.get_attribute("data-drawn") == "true"
    assert canvas.evaluate(test_browser.PAINTED_PIXELS) > 1000
    assert Path(test_browser.SCREENSHOTS / "categories-desktop.png").exists()
