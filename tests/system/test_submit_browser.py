"""The submit form in Debian's Chromium, driven by Playwright against a live server: a preset
chosen and submitted, the budget following what the user types, a draft that cannot run with
the target shown disabled with its reason and refused, and "run this again" from a config page.

Job messages are captured (the `enqueued` fixture); the workers are test_end_to_end.py's.
"""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.test import Client
from playwright.sync_api import expect

from leaderboard import services
from leaderboard.models import Job
from leaderboard.presets import FORM_DEFAULTS
from runner.config import BenchmarkConfig
from runner.protocols import QuickProtocol, job_token_budget
from tests.support.measured_configs import measure
from tests.system import test_browser
from tests.system.test_browser import shoot

pytestmark = [pytest.mark.browser]

# test_browser.py's Chromium and its page (which fails a test on any console error).
browser = test_browser.browser
page = test_browser.page


@pytest.fixture
def signed_in(transactional_db, live_server, page, user, models, hardware, enqueued):
    """The page with the user's session cookie, as after signing in."""
    client = Client()
    client.force_login(user)
    page.context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )
    return page


def open_form(page, live_server, query: str = "") -> None:
    page.goto(live_server.url + "/submit/" + query)
    expect(page.locator("#submit-form")).to_have_attribute("data-enhanced", "true")


def tokens(config: BenchmarkConfig) -> str:
    return f"{job_token_budget(config)['total_tokens']:,}"


def test_a_preset_fills_the_form_in_place_and_is_submitted(live_server, signed_in, hardware):
    page = signed_in
    open_form(page, live_server)
    assert page.locator("#field-draft_model").is_hidden()  # no speculative type yet
    assert page.locator("#field-depths").is_hidden()

    page.get_by_role("link", name=re.compile("Depth sweep")).click()
    assert page.locator("#id_protocol").input_value() == "depth"
    # The runner's depths fitted to the tiny target's 4096-token training context: those that
    # fit, and the longest that fits in place of the rest.
    assert page.locator("#id_depths").input_value() == "512,3072"
    assert page.locator("#field-runs").is_hidden() and page.locator("#field-depths").is_visible()
    assert page.url.endswith("?preset=depth")
    expect(page.locator("#estimate-ok")).to_be_visible()

    page.get_by_role("link", name=re.compile("Quick leaderboard")).click()
    quick = QuickProtocol(**FORM_DEFAULTS["quick"])
    assert page.locator("#id_runs").input_value() == str(quick.runs)
    expect(page.locator('[data-estimate="total_tokens"]')).to_have_text(
        tokens(BenchmarkConfig(target_model="tiny-qwen3.gguf", protocol=quick))
    )
    expect(page.locator("#estimate-ok")).to_be_visible()
    shoot(page, "submit-preset")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))

    job = Job.objects.get(auto_scheduled=False)
    assert job.config.canonical["protocol"] == quick.model_dump(mode="json")
    assert job.hardware == hardware


def test_the_budget_follows_the_fields_as_the_user_types(live_server, signed_in):
    page = signed_in
    open_form(page, live_server)
    total = page.locator('[data-estimate="total_tokens"]')
    quick = FORM_DEFAULTS["quick"]
    expect(total).to_have_text(
        tokens(BenchmarkConfig(target_model="tiny-qwen3.gguf", protocol=QuickProtocol(**quick)))
    )

    page.fill("#id_n_predict", "96")
    expect(total).to_have_text(
        tokens(
            BenchmarkConfig(
                target_model="tiny-qwen3.gguf", protocol=QuickProtocol(**quick | {"n_predict": 96})
            )
        )
    )
    page.fill("#id_runs", "4")
    expect(total).to_have_text(
        tokens(
            BenchmarkConfig(
                target_model="tiny-qwen3.gguf",
                protocol=QuickProtocol(**quick | {"n_predict": 96, "runs": 4}),
            )
        )
    )
    expect(page.locator('[data-estimate="gpu_time"]')).to_have_text("unknown")

    # n_max appears with a speculative type and is bounded by it; an out-of-range value is
    # reported before anything is submitted.
    assert page.locator("#id_n_max").is_hidden()
    page.select_option("#id_target_model", "tiny-qwen3.gguf")
    page.check("input[name=spec_types][value=draft-dflash]")
    page.select_option("#id_draft_model", "tiny-dflash.gguf")
    assert page.locator("#id_n_max").get_attribute("max") == "15"
    page.fill("#id_n_max", "16")
    expect(page.locator("#estimate-errors")).to_contain_text("out of range for draft-dflash")
    assert page.locator("#id_n_max").get_attribute("aria-invalid") == "true"
    page.fill("#id_n_max", "8")
    expect(page.locator("#estimate-ok")).to_be_visible()
    assert not Job.objects.exists()


def test_a_draft_that_does_not_fit_the_target_is_disabled_with_its_reason_and_refused(
    live_server, signed_in
):
    page = signed_in
    open_form(page, live_server)
    page.fill("#id_n_predict", "32")
    page.select_option("#id_target_model", "tiny-qwen3.gguf")
    page.check("input[name=spec_types][value=draft-dflash]")
    wide = page.locator('#id_draft_model option[value="tiny-dflash-wide.gguf"]')
    assert wide.evaluate("option => option.disabled") is True
    assert "n_embd" in wide.get_attribute("title")
    assert "n_embd" in page.locator("#draft-notes").inner_text()
    matching = page.locator('#id_draft_model option[value="tiny-dflash.gguf"]')
    assert matching.evaluate("option => option.disabled") is False
    shoot(page, "submit-incompatible")

    # A draft chosen for draft-simple stays chosen when the type changes to one it cannot
    # serve: the reason shows beside it, and the server refuses it with the same reason.
    page.uncheck("input[name=spec_types][value=draft-dflash]")
    page.check("input[name=spec_types][value=draft-simple]")
    page.select_option("#id_draft_model", "tiny-qwen3.gguf")
    page.uncheck("input[name=spec_types][value=draft-simple]")
    page.check("input[name=spec_types][value=draft-dflash]")
    expect(page.locator("#draft-notes")).to_contain_text("Chosen, but it cannot run")
    expect(page.locator("#estimate-errors")).to_contain_text("architecture 'dflash'")
    page.get_by_role("button", name="Submit").click()

    error = page.locator("#field-draft_model .errors")
    expect(error).to_contain_text("needs a draft with general.architecture 'dflash'")
    assert not Job.objects.exists()


def test_run_this_again_opens_the_form_filled_in(
    live_server, signed_in, user, hardware, make_result
):
    page = signed_in
    config = measure(user, hardware, make_result, 4, [100.0, 104.0]).config
    page.goto(f"{live_server.url}/configs/{config.key}/")
    page.get_by_role("link", name="Run this again").click()
    page.wait_for_url(re.compile(rf"/submit/\?from={config.key}$"))
    expect(page.locator("#submit-form")).to_have_attribute("data-enhanced", "true")

    assert page.locator("#id_target_model").input_value() == "tiny-qwen3.gguf"
    assert page.locator("#id_draft_model").input_value() == "tiny-qwen3.gguf"
    assert page.locator("input[name=spec_types][value=draft-simple]").is_checked()
    assert page.locator("#id_n_max").input_value() == "4"
    assert page.locator("#id_n_predict").input_value() == "64"
    assert config.key in page.locator("#rerun").inner_text()
    # The baseline measured with it gives this hardware's speed for the target.
    expect(page.locator('[data-estimate="gpu_time"]')).not_to_have_text("unknown")
    shoot(page, "submit-run-again")

    page.select_option("#id_hardware", hardware.slug)
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    assert Job.objects.filter(auto_scheduled=False).latest("created_at").config == config


def test_choosing_another_host_starts_threads_at_what_is_fastest_there(
    live_server, signed_in, hardware
):
    """The H200 keeps the engine's default (no thread counts compared there); a two-core CPU
    host starts at 1 with its reason; a count the user typed stays when the host changes."""
    cpu = services.register_hardware(gpu_name="CPU Intel Xeon Processor", memory_bytes=25 * 2**30)
    page = signed_in
    open_form(page, live_server, f"?hardware={hardware.slug}")
    assert page.locator("#id_threads").input_value() == ""
    page.locator("#id_hardware").select_option(cpu.slug)
    assert page.locator("#id_threads").input_value() == "1"
    expect(page.locator("#id_threads_helptext")).to_contain_text("a CPU host of unknown cores")
    page.locator("#id_hardware").select_option(hardware.slug)
    assert page.locator("#id_threads").input_value() == ""
    page.locator("#id_threads").fill("3")
    page.locator("#id_hardware").select_option(cpu.slug)
    assert page.locator("#id_threads").input_value() == "3"
