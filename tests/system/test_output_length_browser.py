"""An output-length config's page in Debian's Chromium, driven by Playwright against a live server:
the "speedup against output length" chart is drawn (pixels on the canvas, no console error), with
a whisker per length, the 1.0x line where 1.0 sits and each point in its verdict's colour.
Screenshots go to test-artifacts/screenshots/ as for the other browser tests.
"""

from __future__ import annotations

import pytest

from leaderboard import services
from tests.support.output_length_results import output_length_config, output_length_result
from tests.system import test_browser
from tests.system.test_browser import shoot

pytestmark = [pytest.mark.browser]

# test_browser.py's Chromium and its page (which fails a test on any console error).
browser = test_browser.browser
page = test_browser.page
models = test_browser.models

LENGTHS = [16, 32, 64, 128]
# Drafting pays at short outputs and not at the longest (a DFlash user's 2.58x at 64 tokens and
# 0.84x at 2,048, scaled down).
SPECULATIVE = [130.0, 100.0, 72.0, 52.0]
BASELINE = [50.0, 55.0, 60.0, 62.0]

# What the drawn chart holds: its whiskers, where its 1.0x line went, and each point's fill.
CHART_STATE = """canvas => {
  const chart = Chart.getChart(canvas);
  return {
    whiskers: chart.$whiskers,
    line: chart.$referenceLine && chart.$referenceLine.value,
    linePixel: chart.$referenceLine && chart.$referenceLine.pixel,
    onePixel: chart.scales.y.getPixelForValue(1),
    fills: chart.data.datasets[0].pointBackgroundColor,
    xs: chart.data.datasets[0].data.map(p => p.x)
  };
}"""


@pytest.fixture
def output_length_site(transactional_db, user, models, hardware, tiny_models):
    directory = next(iter(tiny_models.values())).parent
    config = output_length_config(LENGTHS)
    result = output_length_result(config, SPECULATIVE, BASELINE, models_dir=directory)
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    return config.key


def test_the_config_page_draws_speedup_against_output_length(live_server, page, output_length_site):
    page.goto(f"{live_server.url}/configs/{output_length_site}/")
    canvas = page.locator("#output-length-chart")
    canvas.scroll_into_view_if_needed()
    assert canvas.get_attribute("data-drawn") == "true"
    assert canvas.evaluate(test_browser.PAINTED_PIXELS) > 1000
    state = canvas.evaluate(CHART_STATE)
    assert state["xs"] == LENGTHS
    assert state["whiskers"] == len(LENGTHS)
    assert state["line"] == 1 and abs(state["linePixel"] - state["onePixel"]) <= 1
    # 2.6x and 1.8x are clearly faster (green), 0.84x clearly slower (red).
    assert state["fills"][0] == "#1d7a46" and state["fills"][-1] == "#c0392b"
    rows = page.locator("#config-output-length-table tbody tr")
    assert rows.count() == len(LENGTHS)
    assert "slower" in rows.nth(3).inner_text()
    page.locator("#output-length-chart").scroll_into_view_if_needed()
    shoot(page, "config-output-length")
