"""Presets that fit the model, refusals at their field while typing, and noisy runs flagged, in
Debian's Chromium at 1440 and 390 px: the real model (Gemma 3 270M base, 32,768 tokens of
training context) with the context-sweep preset gets lengths it can hold and no error; an
out-of-range value is refused at its field, in words, before anything is submitted; a run with
an outlier request says so, why and how to re-run, on its job page and its run page.

Screenshots go to test-artifacts/screenshots/ (presets-*, noisy-*), one per width.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from leaderboard import services
from leaderboard.models import Job, ModelFile, Run
from leaderboard.presets import sweep_point
from runner.gguf.real_model import (
    INSTALL_HINT,
    REAL_MODEL_NAME,
    place_real_model,
    real_model_installed,
)
from tests.support.measured_configs import measure
from tests.system import test_browser, test_submit_browser
from tests.system.test_browser import SCREENSHOTS

pytestmark = [pytest.mark.browser]

browser = test_browser.browser
page = test_browser.page
# The page as after signing in (test_submit_browser.py's).
signed_in = test_submit_browser.signed_in

WIDTHS = (1440, 390)
# One request of three at 1.43 tok/s (its 64 tokens take 44 s), the others at 25-27 tok/s.
OUTLIER_DECODE = [25.6, 1.43, 26.7]


@pytest.fixture
def real_target(transactional_db, tiny_models) -> ModelFile:
    """The real model placed beside the tiny ones and registered as an admin would."""
    if not real_model_installed():
        pytest.skip(f"needs the real model: {INSTALL_HINT}")
    place_real_model(next(iter(tiny_models.values())).parent)
    return services.register_model(path=REAL_MODEL_NAME)


def at_width(page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})


def fits_the_width(page) -> bool:
    """No horizontal scroll of the page."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def shot(page, name: str, width: int, *, full_page: bool = True) -> None:
    """The whole page, or what the window shows (a field and its error, legible at 390 px)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{name}-{width}.png", full_page=full_page)


def open_form(page, live_server, query: str = "") -> None:
    page.goto(live_server.url + "/submit/" + query)
    expect(page.locator("#submit-form")).to_have_attribute("data-enhanced", "true")


def settled(page, *, requests: int) -> None:
    """Wait for the live estimate of what the form holds now: `requests` requests."""
    expect(page.locator('[data-estimate="requests"]')).to_have_text(str(requests), timeout=15_000)
    expect(page.locator("#estimate-body")).not_to_have_attribute("aria-busy", "true")


def lengths(page, field: str) -> list[int]:
    return [int(part) for part in page.locator(f"#id_{field}").input_value().split(",")]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_context_sweep_preset_fits_the_real_models_training_context(
    live_server, signed_in, real_target, width
):
    page = signed_in
    at_width(page, width)
    context = real_target.model_info().context_length
    assert context == 32_768
    open_form(page, live_server)

    # The preset first, on the tiny target (4,096 tokens), then the real model: the lengths the
    # user did not type follow the model.
    page.select_option("#id_target_model", "tiny-qwen3.gguf")
    page.get_by_role("link", name=re.compile("Context sweep")).click()
    assert lengths(page, "sweep_lengths") == [512, 1024]
    page.select_option("#id_target_model", real_target.path)
    sweep = lengths(page, "sweep_lengths")
    # Input = output: each point needs twice its length and 16 tokens of slack.
    assert all(2 * n + 16 <= context for n in sweep)
    assert sweep[:3] == [512, 4096, 12288] and sweep[-1] > 12288
    # The estimate is of these lengths (each point's requests and warm-ups), and accepts them.
    points = [sweep_point(n) for n in sweep]
    settled(page, requests=sum(p["requests"] + p["warmup"] for p in points))
    expect(page.locator("#estimate-ok")).to_be_visible()
    assert page.locator("#estimate-errors").count() == 0
    assert page.locator(".field .errors").count() == 0
    assert page.locator("#id_ctx_size").input_value() == ""

    # The depth sweep likewise.
    page.get_by_role("link", name=re.compile("Depth sweep")).click()
    depths = lengths(page, "depths")
    output = int(page.locator("#id_output_tokens").input_value())
    assert all(depth + output + 16 <= context for depth in depths) and max(depths) > 12288
    per_depth = int(page.locator("#id_requests").input_value()) + int(
        page.locator("#id_warmup").input_value()
    )
    settled(page, requests=len(depths) * per_depth)
    expect(page.locator("#estimate-ok")).to_be_visible()

    page.get_by_role("link", name=re.compile("Context sweep")).click()
    settled(page, requests=sum(p["requests"] + p["warmup"] for p in points))
    expect(page.locator("#estimate-ok")).to_be_visible()
    assert fits_the_width(page)
    shot(page, "presets-context-sweep-real-model", width)
    assert not Job.objects.exists()


@pytest.mark.parametrize("width", WIDTHS)
def test_an_out_of_range_value_is_refused_at_its_field_while_typing(
    live_server, signed_in, real_target, width
):
    page = signed_in
    at_width(page, width)
    open_form(page, live_server)
    page.select_option("#id_target_model", real_target.path)

    page.fill("#id_runs", "0")
    expect(page.locator("#field-runs .errors")).to_have_text("at least 1")
    assert page.locator("#id_runs").get_attribute("aria-invalid") == "true"
    assert "errors-runs" in page.locator("#id_runs").get_attribute("aria-describedby")

    assert "Input should be" not in page.locator("#submit-form").inner_text()
    assert fits_the_width(page)
    page.locator("#field-runs").scroll_into_view_if_needed()
    shot(page, "presets-errors-while-typing", width, full_page=False)
    page.fill("#id_runs", "3")
    expect(page.locator("#field-runs .errors")).to_have_count(0)

    page.fill("#id_ctx_size", "40000")
    expect(page.locator("#field-ctx_size .errors")).to_have_text(
        "at most 32,768 for this model (its training context)"
    )
    page.locator("#field-ctx_size").scroll_into_view_if_needed()
    shot(page, "presets-context-error-while-typing", width, full_page=False)
    page.fill("#id_ctx_size", "")
    expect(page.locator("#estimate-ok")).to_be_visible()
    assert page.locator(".field .errors").count() == 0
    assert page.locator("#id_runs").get_attribute("aria-invalid") is None
    assert not Job.objects.exists()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_noisy_run_is_flagged_with_a_re_run_on_its_job_and_run_pages(
    live_server, signed_in, user, hardware, make_result, width
):
    page = signed_in
    at_width(page, width)
    job = measure(user, hardware, make_result, 4, OUTLIER_DECODE, runs=3)
    run = Run.objects.get(job=job)

    for url, name in ((f"/jobs/{job.pk}/", "noisy-job"), (f"/runs/{run.pk}/", "noisy-run")):
        page.goto(live_server.url + url)
        noise = page.locator("#noise")
        expect(noise).to_be_visible()
        expect(noise).to_contain_text("noisy")
        expect(noise).to_contain_text("request 1 took 44.1 s (1.43 tok/s)")
        expect(noise).to_contain_text("reaches 0 tok/s")
        rerun = page.get_by_role("link", name="Run this config again")
        expect(rerun).to_be_visible()
        assert rerun.get_attribute("href") == f"/submit/?from={job.config.key}"
        box = noise.bounding_box()
        assert box is not None and box["x"] + box["width"] <= width
        assert fits_the_width(page)
        noise.scroll_into_view_if_needed()
        shot(page, name, width)

    page.get_by_role("link", name="Run this config again").click()
    page.wait_for_url(re.compile(rf"/submit/\?from={job.config.key}$"))
    expect(page.locator("#rerun")).to_contain_text(job.config.key)


def test_the_job_page_drops_the_queued_message_once_it_runs_and_keeps_counting(
    live_server, signed_in, hardware
):
    page = signed_in
    open_form(page, live_server)
    page.select_option("#id_target_model", "tiny-qwen3.gguf")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job = Job.objects.get()
    queued = page.locator(".messages .job-queued")
    expect(queued).to_contain_text(f"Job {job.pk} is queued.")

    # The worker starts it and reports one request of three done after 5 s; then nothing for a
    # while (a long request): the page still moves.
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    services.record_progress(
        job_id=job.pk,
        progress={"phase": "measuring", "done": 1, "total": 3, "tokens": 64, "elapsed_s": 5.0},
    )
    expect(page.locator('[data-field="status"]')).to_have_text("running")
    expect(queued).to_have_count(0)
    current = page.locator('[data-field="current"]')
    expect(current).to_contain_text("request 2 running for", timeout=15_000)
    elapsed = page.locator('[data-field="elapsed_s"]')
    first = int(elapsed.inner_text())
    page.wait_for_timeout(2_500)
    assert int(elapsed.inner_text()) >= first + 2
    assert first >= 5
