"""A quality config's page and its run's page in Debian's Chromium, driven by Playwright against
a live server: the accuracies and their paired difference sit beside the fidelity badge and read
on a phone without overflowing the page. Screenshots go to test-artifacts/screenshots/ as for the
other browser tests.
"""

from __future__ import annotations

import pytest

from leaderboard import services
from leaderboard.models import Run
from tests.support.quality_results import quality_config, quality_result
from tests.system import test_browser
from tests.system.test_browser import shoot

pytestmark = [pytest.mark.browser]

# test_browser.py's Chromium and its page (which fails a test on any console error).
browser = test_browser.browser
page = test_browser.page
models = test_browser.models

# Twelve tasks: the draft gets 3 right, its baseline 11.
SPECULATIVE = [True, True, True] + [False] * 9
BASELINE = [True] * 11 + [False]


@pytest.fixture
def quality_site(transactional_db, user, models, hardware, tiny_models):
    directory = next(iter(tiny_models.values())).parent
    result = quality_result(SPECULATIVE, BASELINE, models_dir=directory)
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    return quality_config(len(SPECULATIVE)).key


# What reaches past a phone's screen, to name it when the page is wider than the screen.
WIDEST_ELEMENTS = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > 390).slice(0, 8)
  .map(e => `${e.tagName}#${e.id}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`)"""


def test_the_quality_figures_read_beside_the_badge_on_desktop_and_phone(
    live_server, page, quality_site
):
    page.goto(f"{live_server.url}/configs/{quality_site}/")
    figures = page.locator("#quality")
    assert "3 of 12 tasks correct" in figures.inner_text()
    assert "fewer correct" in figures.locator(".badge").inner_text()
    shoot(page, "config-quality")
    figures.screenshot(path=test_browser.SCREENSHOTS / "config-quality-figures.png")
    run = Run.objects.exclude(config__spec_label="none").get()
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    assert "paired baseline 11 of 12" in page.locator("#quality").inner_text()
    # Loaded at a phone's width (right after a resize, Chart.js may not yet have redrawn its
    # canvases at the new width: CI measured the old 1,163 px canvas there).
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, (width, page.evaluate(WIDEST_ELEMENTS))
    shoot(page, "run-quality")
