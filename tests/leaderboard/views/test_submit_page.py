"""The submit form: a signed-in user's, presets with the runner's defaults, only the fields a choice
uses, drafts that cannot run refused with their reason, field errors inline, a valid config
queued (the concurrency and categories protocols' too), the live estimate endpoint and "run this
again" (a config's GPU split too); the "Several GPUs" fieldset, a GPU the kind lacks refused
inline; a NUL in its query is no lookup, and a hostile estimate is a field error in JSON."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta

import pytest
from django.db.models import Sum
from django.test import Client
from django.utils import timezone

from leaderboard import selectors, services
from leaderboard.forms import initial_from_config
from leaderboard.models import Config, Hardware, Job, ModelFile, RequestRecord
from leaderboard.presets import FORM_DEFAULTS, PRESETS, PROTOCOL_FORM_FIELDS
from leaderboard.services.configs import uploaded_config
from runner.config import DRAFT_MODEL_TYPES, BenchmarkConfig, parse_config
from runner.protocols import (
    PROTOCOLS,
    ConcurrencyProtocol,
    DepthProtocol,
    QuickProtocol,
    job_token_budget,
    token_budget,
)
from tests.support.measured_configs import measure, measure_config
from tests.support.pages import text
from tests.support.seed_kit import SEED_CSV

QUICK_FORM = {
    "target_model": "tiny-qwen3.gguf",
    "protocol": "quick",
    "runs": "2",
    "n_predict": "32",
}


@pytest.fixture
def signed_in(client, user, models, hardware):
    client.force_login(user)
    return client


def page_of(response) -> str:
    assert response.status_code == 200
    return response.content.decode()


def input_value(page: str, name: str) -> str:
    match = re.search(rf'<input [^>]*name="{name}"[^>]*>', page)
    assert match, f"no input {name}"
    value = re.search(r'value="([^"]*)"', match.group(0))
    return html.unescape(value.group(1)) if value else ""


def selected(page: str, name: str) -> list[str]:
    select = re.search(rf'<select name="{name}".*?</select>', page, re.S).group(0)
    return re.findall(r'<option value="([^"]*)"[^>]*selected', select)


def checked(page: str, name: str) -> list[str]:
    return re.findall(rf'<input type="checkbox" name="{name}" value="([^"]*)"[^>]*checked', page)


def textarea_value(page: str, name: str) -> str:
    match = re.search(rf'<textarea [^>]*name="{name}"[^>]*>\n?(.*?)</textarea>', page, re.S)
    assert match, f"no textarea {name}"
    return match.group(1)


def script_data(page: str) -> dict:
    found = re.search(r'<script id="submit-data" type="application/json">(.*?)</script>', page)
    return json.loads(found.group(1))


def estimate(client, form: dict) -> dict:
    response = client.post("/submit/estimate", form)
    assert response.status_code == 200
    return response.json()


# The form and its presets -------------------------------------------------------------------------


def test_the_submit_form_needs_a_signed_in_user(client, models, hardware):
    response = client.get("/submit/")
    assert response.status_code == 302 and "/accounts/login/" in response.headers["Location"]


def test_the_depth_preset_fills_the_form_fitted_to_the_targets_training_context(signed_in):
    page = page_of(signed_in.get("/submit/", {"preset": "depth"}))
    defaults = DepthProtocol()
    context = ModelFile.objects.get(path="tiny-qwen3.gguf").model_info().context_length
    depths = [int(depth) for depth in input_value(page, "depths").split(",")]

    assert selected(page, "protocol") == ["depth"]
    # The runner's depths that fit the tiny model's 4096 tokens, then the longest that fits.
    fits = [d for d in defaults.depths if d + defaults.output_tokens + 16 <= context]
    assert depths[: len(fits)] == fits and len(depths) == len(fits) + 1
    needed = depths[-1] + defaults.output_tokens + 16
    assert needed <= context < needed + 1024
    assert input_value(page, "output_tokens") == str(defaults.output_tokens)
    assert input_value(page, "requests") == str(defaults.requests)
    assert 'href="?preset=depth" data-preset="depth" aria-current="true"' in page


def long_context_target(models, context_length: int = 32_768) -> ModelFile:
    """A target registered as the real model is (Gemma 3 270M: 32,768 tokens of training
    context), its other metadata the tiny model's."""
    tiny = models["tiny-qwen3"]
    return ModelFile.objects.create(
        name="gemma-3-270m (32K)",
        path="gemma-3-270m-32k.gguf",
        sha256="0" * 64,
        size_bytes=tiny.size_bytes,
        architecture=tiny.architecture,
        role=ModelFile.Role.TARGET,
        metadata=tiny.metadata | {"context_length": context_length},
    )


def test_the_sweeps_are_fitted_to_each_targets_training_context(signed_in, models):
    target = long_context_target(models)
    page = page_of(signed_in.get("/submit/", {"preset": "context-sweep"}))
    fitted = script_data(page)["fitted"][target.path]

    # The seed's 36,864-token point needs 73,744 tokens; the longest that fits replaces it.
    assert fitted["context-sweep"]["sweep_lengths"] == "512,4096,12288,15360"
    assert fitted["depth"]["depths"] == "512,4096,12288,31744"
    assert "concurrency" not in fitted and "quick" not in fitted


def test_the_fitted_context_sweep_is_accepted_for_the_model_it_was_fitted_to(
    signed_in, models, hardware
):
    target = long_context_target(models)
    page = page_of(signed_in.get("/submit/", {"preset": "context-sweep"}))
    form = {
        "hardware": hardware.slug,
        "target_model": target.path,
        "protocol": "context-sweep",
        "sweep_lengths": script_data(page)["fitted"][target.path]["context-sweep"]["sweep_lengths"],
    }
    answer = estimate(signed_in, form)
    assert answer["valid"] is True, answer["errors"]
    # The seed's sweep on the same model is refused at the lengths, in words, not at the empty
    # context field.
    answer = estimate(signed_in, form | {"sweep_lengths": "512,4096,12288,36864"})
    assert [(e["field"], e["message"]) for e in answer["errors"]] == [
        (
            "sweep_lengths",
            "these settings need 73,744 tokens of context: at most 32,768 for this model "
            "(its training context)",
        )
    ]


def test_a_context_typed_above_the_training_context_is_refused_at_that_field(
    signed_in, models, hardware
):
    target = long_context_target(models)
    answer = estimate(
        signed_in,
        QUICK_FORM | {"hardware": hardware.slug, "target_model": target.path, "ctx_size": "40000"},
    )
    assert {"field": "ctx_size", "label": "Context size",
            "message": "at most 32,768 for this model (its training context)"} in answer["errors"]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"n_max": "0"}, "n_max", "at least 1"),
        ({"runs": "0"}, "runs", "at least 1"),
        ({"n_predict": "200000"}, "n_predict", "at most 131,072"),
        ({"threads": "0"}, "threads", "at least 1"),
        ({"prompt": "x" * 20_001}, "prompt", "at most 20,000 characters"),
    ],
)  # fmt: skip
def test_refusals_are_worded_at_their_field_not_in_pydantics_words(
    signed_in, hardware, change, field, message
):
    answer = estimate(signed_in, QUICK_FORM | {"hardware": hardware.slug} | change)
    assert [(e["field"], e["message"]) for e in answer["errors"]] == [(field, message)]
    assert "Input should be" not in answer["html"]


def test_the_form_carries_threads_and_the_quick_prompt_into_the_config(signed_in, hardware):
    prompt = "Once upon a time, in a harbour town,"
    response = signed_in.post(
        "/submit/",
        QUICK_FORM | {"hardware": hardware.slug, "threads": "2", "prompt": prompt},
    )
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.config.canonical["threads"] == 2
    assert job.config.canonical["protocol"]["prompt"] == prompt


def test_the_quick_preset_is_the_default_and_every_preset_carries_its_numbers(signed_in):
    page = page_of(signed_in.get("/submit/"))
    quick = FORM_DEFAULTS["quick"]
    data = script_data(page)

    assert selected(page, "protocol") == ["quick"]
    assert input_value(page, "runs") == str(quick["runs"])
    assert input_value(page, "n_predict") == str(quick["n_predict"])
    assert html.unescape(textarea_value(page, "prompt")) == quick["prompt"]
    assert data["presets"]["quick"] == {"protocol": "quick"} | quick
    assert data["presets"]["depth"]["depths"] == ",".join(map(str, DepthProtocol().depths))
    assert f"{quick['runs']} runs of {quick['n_predict']} tokens" in page
    # A preset whose protocol the runner does not know yet is shown, but cannot be chosen.
    for preset in PRESETS:
        known = preset.protocol in PROTOCOLS and preset.protocol in PROTOCOL_FORM_FIELDS
        assert (f'data-preset="{preset.name}"' in page) is known
        assert (f'data-preset-unavailable="{preset.name}"' in page) is not known


def test_the_concurrency_preset_fills_its_fields_and_its_budget_is_the_runners(signed_in, hardware):
    page = page_of(signed_in.get("/submit/", {"preset": "concurrency"}))
    defaults = ConcurrencyProtocol()

    assert selected(page, "protocol") == ["concurrency"]
    assert input_value(page, "levels") == ",".join(map(str, defaults.levels))
    assert input_value(page, "input_tokens") == str(defaults.input_tokens)
    assert input_value(page, "rounds") == str(defaults.rounds)

    form = {
        "hardware": hardware.slug, "target_model": "tiny-qwen3.gguf", "protocol": "concurrency",
        "levels": "1,2", "input_tokens": "64", "output_tokens": "16", "rounds": "2",
        "warmup": "0",
    }  # fmt: skip
    answer = estimate(signed_in, form)
    protocol = ConcurrencyProtocol(
        levels=[1, 2], input_tokens=64, output_tokens=16, rounds=2, warmup=0
    )
    assert answer["valid"] is True, answer["errors"]
    assert answer["budget"] == job_token_budget(
        BenchmarkConfig(target_model="tiny-qwen3.gguf", protocol=protocol)
    )


def test_each_field_says_which_types_and_protocols_use_it(signed_in):
    page = page_of(signed_in.get("/submit/"))

    draft_types = " ".join(DRAFT_MODEL_TYPES)
    assert f'data-spec-types="{draft_types}" id="field-draft_model"' in page
    assert 'data-protocols="depth" id="field-depths"' in page
    assert re.search(r'data-protocols="[^"]*\bquick\b[^"]*\bdepth\b[^"]*" id="field-warmup"', page)
    assert '<fieldset class="group" id="group-draft">' in page
    # The form's own script is a static file (the policy allows no inline scripts).
    assert "/static/leaderboard/submit.js" in re.findall(r'<script src="([^"]+)"', page)
    assert re.search(r"<script>(?!\s*</script>)", page) is None


# Submitting ---------------------------------------------------------------------------------------


def test_the_submit_form_shows_an_inline_error_and_creates_no_job(client, user, models, hardware):
    client.force_login(user)
    form = {
        "hardware": hardware.slug,
        "target_model": "tiny-qwen3.gguf",
        "draft_model": "tiny-dflash.gguf",
        "spec_types": ["draft-dflash"],
        "n_max": "16",
        "protocol": "quick",
        "runs": "3",
        "n_predict": "64",
        "flash_attn": "auto",
        "cache_type_k": "f16",
        "cache_type_v": "f16",
    }
    response = client.post("/submit/", form)
    page = text(response)

    assert response.status_code == 200
    assert re.search(r'id="field-n_max">.*?out of range for draft-dflash', page)
    assert not Job.objects.exists()

    premerge = text(
        client.post(
            "/submit/", form | {"n_max": "8", "draft_model": "tiny-dflash-draft-premerge.gguf"}
        )
    )
    assert re.search(r'id="field-draft_model">.*?pre-merge DFlash file', premerge)


def test_a_valid_form_submission_redirects_to_the_job_page(
    client, user, models, hardware, enqueued
):
    client.force_login(user)
    form = {
        "hardware": hardware.slug, "target_model": "tiny-qwen3.gguf", "draft_model": "tiny-qwen3.gguf",
        "spec_types": ["draft-simple"], "n_max": "4", "protocol": "quick", "runs": "3", "n_predict": "64",
        "warmup": "1", "flash_attn": "auto", "cache_type_k": "f16", "cache_type_v": "f16",
    }  # fmt: skip
    response = client.post("/submit/", form)

    job = Job.objects.get()
    assert response.status_code == 302 and response.headers["Location"] == f"/jobs/{job.pk}/"
    assert job.config.canonical["protocol"]["n_predict"] == 64
    # Its paired baseline is measured in the same run: no automatic baseline job.
    assert not job.auto_scheduled and not job.baseline_jobs.exists()


def test_a_depth_submission_needs_none_of_the_hidden_fields(signed_in, hardware, enqueued):
    # What the page sends with the script on: the shown fields only.
    response = signed_in.post(
        "/submit/",
        {
            "hardware": hardware.slug, "target_model": "tiny-qwen3.gguf", "protocol": "depth",
            "depths": "128, 256", "output_tokens": "16", "requests": "2", "warmup": "0",
        },
    )  # fmt: skip

    job = Job.objects.get()
    assert response.status_code == 302
    assert job.config.canonical["protocol"] == DepthProtocol(
        depths=[128, 256], output_tokens=16, requests=2, warmup=0
    ).model_dump(mode="json")
    assert job.config.canonical["flash_attn"] == "auto"


def test_fields_of_another_protocol_are_not_part_of_the_config(signed_in, hardware, enqueued):
    # Without the script every field is sent; the quick protocol takes only its own.
    response = signed_in.post(
        "/submit/",
        QUICK_FORM | {"hardware": hardware.slug, "depths": "1,2,x", "output_tokens": "999999"},
    )

    assert response.status_code == 302
    assert Job.objects.get().config.canonical["protocol"] == QuickProtocol(
        runs=2, n_predict=32
    ).model_dump(mode="json")


def test_the_form_submits_a_concurrency_config_and_shows_bad_levels_inline(
    client, user, ranked_models, hardware, enqueued
):
    client.force_login(user)
    form = {
        "hardware": hardware.slug,
        "target_model": "tiny-qwen3.gguf",
        "draft_model": "tiny-dflash.gguf",
        "spec_types": ["draft-dflash"],
        "n_max": "4",
        "protocol": "concurrency",
        "levels": "4, 2",
        "input_tokens": "64",
        "output_tokens": "32",
        "rounds": "2",
        "warmup": "1",
    }
    page = text(client.post("/submit/", form))
    assert "strictly increasing" in page and not Job.objects.exists()
    # The error sits at the levels field, not at the top of the form.
    assert re.search(
        r"strictly increasing.{0,400}name=\"levels\"|name=\"levels\".{0,600}strictly increasing",
        page,
    )

    response = client.post("/submit/", form | {"levels": "1,2"})
    assert response.status_code == 302
    job = Job.objects.get(config__protocol="concurrency", config__spec_label="draft-dflash")
    assert job.config.canonical["protocol"]["levels"] == [1, 2]
    assert job.config.canonical["protocol"]["rounds"] == 2


def test_the_form_submits_chosen_categories_and_refuses_an_unknown_one_inline(
    client, user, models, hardware, enqueued
):
    client.force_login(user)
    form = {
        "hardware": hardware.slug,
        "target_model": "tiny-qwen3.gguf",
        "spec_types": ["ngram-mod"],
        "protocol": "categories",
        "categories": ["code", "poetry"],
        "output_tokens": "16",
        "prompts_per_category": "2",
        "warmup": "1",
    }
    page = text(client.post("/submit/", form))
    assert "poetry is not one of the available choices" in page
    assert not Job.objects.exists()

    assert client.post("/submit/", form | {"categories": ["math", "code"]}).status_code == 302
    job = Job.objects.get(config__spec_label="ngram-mod")
    protocol = job.config.canonical["protocol"]
    # The suite's order, whatever order they were checked in.
    assert protocol["categories"] == ["code", "math"] and protocol["prompts_per_category"] == 2


def test_a_draft_that_does_not_fit_the_target_is_greyed_out_and_refused_with_one_reason(
    signed_in, hardware
):
    data = script_data(page_of(signed_in.get("/submit/")))
    reasons = data["compatibility"]["drafts"]["tiny-qwen3.gguf"]["draft-dflash"]

    assert "tiny-dflash.gguf" not in reasons  # the draft trained for this target
    assert "n_embd" in reasons["tiny-dflash-wide.gguf"]
    assert "pre-merge DFlash file" in reasons["tiny-dflash-draft-premerge.gguf"]
    assert data["compatibility"]["n_max"]["tiny-dflash.gguf"] == 15

    response = signed_in.post(
        "/submit/",
        QUICK_FORM
        | {
            "hardware": hardware.slug,
            "draft_model": "tiny-dflash-wide.gguf",
            "spec_types": ["draft-dflash"],
        },
    )
    error = re.search(
        r'id="field-draft_model">.*?<ul class="errorlist"[^>]*><li>(.*?)</li>',
        page_of(response),
        re.S,
    )
    assert html.unescape(error.group(1)) == reasons["tiny-dflash-wide.gguf"]
    assert not Job.objects.exists()


def test_a_target_without_an_mtp_head_greys_out_draft_mtp(signed_in):
    data = script_data(page_of(signed_in.get("/submit/")))
    types = data["compatibility"]["types"]

    assert "no nextn_predict_layers" in types["tiny-qwen3.gguf"]["draft-mtp"]
    assert "draft-mtp" not in types.get("tiny-mtp.gguf", {})


# The live estimate --------------------------------------------------------------------------------


def test_the_estimate_is_the_runners_budget_of_what_the_form_holds(signed_in, user, hardware):
    answer = estimate(
        signed_in,
        QUICK_FORM
        | {
            "hardware": hardware.slug,
            "draft_model": "tiny-dflash.gguf",
            "spec_types": ["draft-dflash"],
            "n_max": "8",
        },
    )
    config = BenchmarkConfig(
        target_model="tiny-qwen3.gguf",
        draft_model="tiny-dflash.gguf",
        spec_types=["draft-dflash"],
        n_max=8,
        protocol=QuickProtocol(runs=2, n_predict=32),
    )

    assert answer["valid"] is True and answer["errors"] == []
    assert answer["budget"] == job_token_budget(config)
    assert f"{answer['budget']['total_tokens']:,}" in answer["html"]
    assert answer["gpu_time"]["known"] is False and "unknown" in answer["html"]
    assert answer["allowance"] == selectors.allowance(user=user).as_dict()


def test_the_estimate_changes_with_a_field(signed_in, hardware):
    small = estimate(signed_in, QUICK_FORM | {"hardware": hardware.slug})
    large = estimate(signed_in, QUICK_FORM | {"hardware": hardware.slug, "n_predict": "64"})

    assert large["budget"]["generated_tokens"] == 2 * small["budget"]["generated_tokens"]


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"spec_types": ["draft-dflash"], "draft_model": "tiny-dflash.gguf", "n_max": "16"},
         "n_max", "out of range for draft-dflash"),
        ({"ctx_size": "300000"}, "ctx_size", "at most 262,144"),
        ({"protocol": "depth", "depths": "512,200000"}, "depths", "must lie between 1 and"),
        ({"n_predict": "many"}, "n_predict", "whole number"),
    ],
)  # fmt: skip
def test_the_estimate_gives_the_validators_field_errors(signed_in, hardware, change, field, words):
    answer = estimate(signed_in, QUICK_FORM | {"hardware": hardware.slug} | change)

    assert answer["valid"] is False
    assert any(e["field"] == field and words in e["message"] for e in answer["errors"]), answer
    assert not Job.objects.exists()


def test_while_the_models_are_refused_the_protocols_own_cost_is_shown(signed_in, hardware):
    answer = estimate(
        signed_in, QUICK_FORM | {"hardware": hardware.slug, "spec_types": ["draft-dflash"]}
    )
    protocol_only = BenchmarkConfig(
        target_model="tiny-qwen3.gguf", protocol=QuickProtocol(runs=2, n_predict=32)
    )

    assert [e["field"] for e in answer["errors"]] == ["draft_model"]
    assert answer["budget_scope"] == "protocol"
    assert answer["budget"] == token_budget(protocol_only)
    assert "the protocol's own cost" in answer["html"]


def test_a_bad_protocol_field_leaves_no_budget_to_show(signed_in, hardware):
    answer = estimate(signed_in, QUICK_FORM | {"hardware": hardware.slug, "runs": "0"})

    assert answer["budget"] is None and answer["gpu_time"] is None
    assert "once the protocol" in answer["html"]


def test_the_estimate_says_when_the_allowance_would_refuse(signed_in, hardware, settings):
    settings.SPECBOARD_MAX_JOB_TOKENS = 100
    answer = estimate(signed_in, QUICK_FORM | {"hardware": hardware.slug})

    assert answer["valid"] is False and "above the 100 one job may use" in answer["refusal"]


def test_the_estimate_needs_a_signed_in_user_and_a_post(client, user, models, hardware):
    assert client.post("/submit/estimate", QUICK_FORM).status_code == 403
    client.force_login(user)
    assert client.get("/submit/estimate").status_code == 405


def test_the_gpu_time_comes_from_the_measured_baseline_speed_on_that_hardware(
    signed_in, user, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0])  # stores its baseline at 50 and 52
    answer = estimate(signed_in, QUICK_FORM | {"hardware": hardware.slug})
    records = RequestRecord.objects.filter(
        run__config__spec_label="none", run__hardware=hardware, phase="measure"
    ).aggregate(Sum("prompt_n"), Sum("prompt_ms"), Sum("predicted_n"), Sum("predicted_ms"))
    prompt_speed = records["prompt_n__sum"] / records["prompt_ms__sum"] * 1000
    decode_speed = records["predicted_n__sum"] / records["predicted_ms__sum"] * 1000
    budget = answer["budget"]

    assert answer["gpu_time"]["known"] is True and answer["gpu_time"]["requests_measured"] == 2
    assert answer["gpu_time"]["decode_tokens_per_second"] == pytest.approx(decode_speed)
    assert answer["gpu_time"]["seconds"] == pytest.approx(
        budget["prompt_tokens"] / prompt_speed + budget["generated_tokens"] / decode_speed
    )
    assert "measured baseline speed" in answer["html"]


# Run this again -----------------------------------------------------------------------------------


def test_run_this_again_fills_the_form_with_the_config_and_submits_the_same_key(
    signed_in, user, hardware, enqueued, make_result
):
    original = measure(user, hardware, make_result, 4, [100.0, 104.0]).config
    config_page = page_of(signed_in.get(f"/configs/{original.key}/"))
    assert f'href="/submit/?from={original.key}">Run this again</a>' in config_page

    page = page_of(signed_in.get("/submit/", {"from": original.key}))
    assert selected(page, "target_model") == ["tiny-qwen3.gguf"]
    assert selected(page, "draft_model") == ["tiny-qwen3.gguf"]
    assert checked(page, "spec_types") == ["draft-simple"]
    assert input_value(page, "n_max") == "4" and input_value(page, "n_predict") == "64"
    assert 'id="rerun-lost"' not in page

    resubmitted = {
        "hardware": hardware.slug, "target_model": "tiny-qwen3.gguf",
        "draft_model": "tiny-qwen3.gguf", "spec_types": ["draft-simple"], "n_max": "4",
        "protocol": "quick", "runs": input_value(page, "runs"), "n_predict": "64",
        "warmup": input_value(page, "warmup"),
    }  # fmt: skip
    assert signed_in.post("/submit/", resubmitted).status_code == 302
    assert Job.objects.filter(auto_scheduled=False).latest("created_at").config == original


def test_run_this_again_says_what_the_form_cannot_carry(signed_in, user, hardware, enqueued):
    job = services.submit_config(
        owner=user,
        data={
            "target_model": "tiny-qwen3.gguf",
            "threads": 4,
            "protocol": {"name": "quick", "seed": 7},
        },
        hardware_slug=hardware.slug,
    )
    page = page_of(signed_in.get("/submit/", {"from": job.config.key}))

    lost = re.search(r'id="rerun-lost">The form cannot set (.*?) as', page).group(1)
    assert lost == "protocol"
    assert input_value(page, "threads") == "4"


def test_a_config_of_an_unregistered_model_says_why_it_cannot_be_run(signed_in):
    elsewhere = uploaded_config(
        BenchmarkConfig(target_model="elsewhere/Qwen3-8B-Q4_K_M.gguf"),
        baseline=None,
        uploaded_by="ada",
    )
    config_page = page_of(signed_in.get(f"/configs/{elsewhere.key}/"))
    page = page_of(signed_in.get("/submit/", {"from": elsewhere.key}))

    assert "Run this again" not in config_page
    assert "elsewhere/Qwen3-8B-Q4_K_M.gguf is not a registered model on this site" in config_page
    assert "This config cannot be run again here" in page
    assert "elsewhere/Qwen3-8B-Q4_K_M.gguf is not a registered model" in page


def test_an_imported_config_and_an_unknown_key_cannot_be_run_again(signed_in):
    services.import_leaderboard_csv(content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000")
    seed = Config.objects.filter(self_reported=True).first()
    assert "it is not a runner config" in page_of(signed_in.get(f"/configs/{seed.key}/"))
    assert "it is not a runner config" in page_of(signed_in.get("/submit/", {"from": seed.key}))
    assert "There is no config with key" in page_of(signed_in.get("/submit/", {"from": "0" * 16}))


def test_a_served_hardware_can_be_chosen_in_the_link(signed_in, hardware):
    other = services.register_hardware(gpu_name="NVIDIA RTX 4090", memory_bytes=24 * 2**30)
    page = page_of(signed_in.get("/submit/", {"hardware": other.slug}))
    assert selected(page, "hardware") == [other.slug]


# Hostile queries and estimates ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("from=%00", "There is no config with key"),
        ("from=abc%00def", "There is no config with key"),
        ("hardware=%00", None),
        ("hardware=x%00&preset=quick", None),
    ],
)
def test_a_nul_in_the_submit_pages_query_is_no_lookup(user, models, hardware, query, problem):
    """PostgreSQL refuses a NUL in a query's text: the page says there is no such config."""
    client = Client()
    client.force_login(user)

    response = client.get(f"/submit/?{query}")

    assert response.status_code == 200
    if problem:
        assert problem in response.content.decode()


@pytest.mark.parametrize(
    "field",
    ["hardware", "target_model", "draft_model", "spec_types", "n_max", "ctx_size", "protocol",
     "runs", "n_predict", "concurrency_levels", "context_lengths", "categories"],
)  # fmt: skip
@pytest.mark.parametrize(
    "value", ["\x00", "-1", "99999999999999999999999", "1e309", "nan", "x" * 10_000, "1," * 5000]
)
def test_hostile_estimates_are_field_errors_in_json(user, models, hardware, field, value):
    web = Client()
    web.force_login(user)
    data = {"hardware": hardware.slug, "target_model": "tiny-qwen3", "protocol": "quick"}

    response = web.post("/submit/estimate", data | {field: value})

    assert response.status_code == 200
    body = response.json()
    assert isinstance(body["valid"], bool) and isinstance(body["errors"], list)
    assert "html" in body


# The "Several GPUs" fieldset, through the same service as the API.


def test_the_submit_form_sends_a_split_and_shows_a_gpu_the_kind_lacks_inline(
    client, user, models, two_3090s, enqueued
):
    client.force_login(user)
    page = client.get("/submit/").content.decode()
    assert 'id="group-gpus"' in page and "2x RTX 3090 24GB" in page
    form = {
        "hardware": two_3090s.slug, "target_model": "tiny-qwen3.gguf", "protocol": "quick",
        "runs": "2", "n_predict": "32", "split_mode": "none", "main_gpu": "1",
    }  # fmt: skip
    response = client.post("/submit/", form)
    assert response.status_code == 302
    canonical = Job.objects.get().config.canonical
    assert (canonical["split_mode"], canonical["main_gpu"]) == ("none", 1)

    refused = client.post(
        "/submit/", form | {"main_gpu": "", "tensor_split": "1,1,1", "split_mode": "layer"}
    )
    assert refused.status_code == 200
    assert "this hardware has 2 GPUs" in refused.content.decode()
    assert Job.objects.count() == 1


def test_run_this_again_carries_a_configs_split(db):
    from leaderboard.forms import initial_from_config

    config = parse_config(
        {"target_model": "t.gguf", "draft_model": "d.gguf", "spec_types": "draft-simple",
         "split_mode": "row", "tensor_split": [3, 1], "main_gpu": 1, "draft_gpu": 0}
    )  # fmt: skip
    initial, lost = initial_from_config(config)
    assert lost == []
    assert (initial["split_mode"], initial["main_gpu"], initial["draft_gpu"]) == ("row", 1, 0)


# Threads and the time a job takes (issue 44, point 7) ----------------------------------------------


def threads_on_the_page(client, hardware_slug: str) -> tuple[str, str]:
    """The threads input's value and its help text on the submit page for this host."""
    page = page_of(client.get(f"/submit/?hardware={hardware_slug}"))
    helptext = re.search(r'<small class="help" id="id_threads_helptext">(.*?)</small>', page, re.S)
    return input_value(page, "threads"), html.unescape(helptext.group(1))


def test_on_a_two_core_cpu_host_not_yet_measured_threads_start_at_one_and_say_why(
    signed_in, hardware
):
    cpu = services.register_hardware(gpu_name="CPU Intel Xeon Processor", memory_bytes=25 * 2**30)
    value, helptext = threads_on_the_page(signed_in, cpu.slug)
    assert value == "1"
    assert "a CPU host of unknown cores" in helptext and "one engine thread" in helptext
    # The page's script starts each host's threads the same way; a GPU host not measured at
    # several thread counts keeps the engine's default.
    threads = script_data(page_of(signed_in.get("/submit/")))["threads"]
    assert threads[cpu.slug]["threads"] == 1 and threads[hardware.slug]["threads"] is None
    assert "no thread counts compared on this host yet" in threads[hardware.slug]["help"]


def test_a_cpu_kind_known_by_its_cpu_model_starts_at_one_thread_whatever_its_name(
    signed_in, hardware
):
    # A kind registered by a name of its own is a CPU host by the CPU model the door checks its
    # results against (`Hardware.cpu_model`), not by a "CPU " prefix.
    lab = services.register_hardware(gpu_name="Lab box", memory_bytes=25 * 2**30)
    value, _ = threads_on_the_page(signed_in, lab.slug)
    assert value != "1"
    Hardware.objects.filter(pk=lab.pk).update(cpu_model="Intel(R) Xeon(R) Platinum 8480+")
    value, helptext = threads_on_the_page(signed_in, lab.slug)
    assert value == "1" and "one engine thread" in helptext


def quick_baseline(threads: int | None) -> dict:
    config = {"target_model": "tiny-qwen3.gguf", "spec_types": ["ngram-mod"]}
    # Two requests a batch, as the baselines below give.
    protocol = {"protocol": {"name": "quick", "runs": 2}}
    return config | ({"threads": threads} if threads else {}) | protocol


def pooled_baseline_speed(hardware, threads: int | None) -> float:
    """Decode tok/s of the baseline requests measured at this thread count: tokens over time."""
    records = RequestRecord.objects.filter(
        run__config__spec_label="none", run__hardware=hardware, phase="measure"
    )
    records = records.filter(run__config__canonical__threads=threads)
    totals = records.aggregate(Sum("predicted_n"), Sum("predicted_ms"))
    return totals["predicted_n__sum"] / totals["predicted_ms__sum"] * 1000


@pytest.mark.parametrize(
    ("one_thread", "all_cores", "expected"),
    [((20.0, 21.0), (6.0, 7.0), "1"), ((6.0, 7.0), (20.0, 21.0), "")],
)
def test_threads_start_at_the_count_measured_fastest_on_that_host(
    signed_in, user, hardware, enqueued, make_result, one_thread, all_cores, expected
):
    for threads, baseline in ((1, one_thread), (None, all_cores)):
        measure_config(user, hardware, make_result, quick_baseline(threads), [30.0], baseline)
    value, helptext = threads_on_the_page(signed_in, hardware.slug)
    assert value == expected
    speeds = {"-t 1": pooled_baseline_speed(hardware, 1)}
    speeds["all cores"] = pooled_baseline_speed(hardware, None)
    (fast, fast_speed), (slow, slow_speed) = sorted(speeds.items(), key=lambda s: -s[1])
    assert fast == ("-t 1" if expected == "1" else "all cores")
    said = (
        f"fastest measured on this host: {fast_speed:.1f} decode tok/s at {fast}, "
        f"against {slow_speed:.1f} at {slow} (tiny-qwen3's baselines, 4 requests)"
    )
    assert said in helptext, helptext


def test_the_time_estimate_counts_what_the_hosts_finished_jobs_took(
    signed_in, user, hardware, enqueued, make_result
):
    """A job takes longer than its tokens at the measured speed (server start, model loading,
    warm-ups, the baseline): the estimate scales by what this target's finished jobs took, so
    it comes within 2x of the time the same job then takes (it said 36 s of a 231 s job)."""
    # Measured on the H200's GPU, as its host's results say: the estimate is of GPU time.
    job = measure(user, hardware, make_result, 4, [100.0, 104.0], gpu="H200")
    form = QUICK_FORM | {"hardware": hardware.slug}
    before = estimate(signed_in, form)["gpu_time"]
    assert before["jobs_timed"] == 0
    # The job held the host six times as long as its tokens alone would take.
    same_config = parse_config(job.config.canonical)
    tokens_alone = (
        job_token_budget(same_config)["prompt_tokens"] / before["prompt_tokens_per_second"]
        + job_token_budget(same_config)["generated_tokens"] / before["decode_tokens_per_second"]
    )
    started = job.finished_at or timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.SUCCEEDED,
        started_at=started,
        finished_at=started + timedelta(seconds=6 * tokens_alone),
    )
    rerun = {
        k: v for k, v in initial_from_config(same_config)[0].items() if v not in (None, "", [])
    }
    answer = estimate(signed_in, rerun | {"hardware": hardware.slug})
    wall = 6 * tokens_alone
    assert answer["gpu_time"]["jobs_timed"] == 1
    assert wall / 2 <= answer["gpu_time"]["seconds"] <= wall * 2
    assert answer["gpu_time"]["seconds"] == pytest.approx(wall)
    assert "times 6.0" in answer["html"] and "last 1 finished job here" in answer["html"]
    assert answer["html"].count("GPU time:") == 1


def test_on_a_cpu_host_the_estimate_says_cpu_time(signed_in, user, enqueued):
    cpu = services.register_hardware(gpu_name="CPU Intel Xeon Processor", memory_bytes=25 * 2**30)
    answer = estimate(signed_in, QUICK_FORM | {"hardware": cpu.slug})
    assert answer["time_kind"] == "CPU"
    assert "CPU time:" in answer["html"] and "GPU time" not in answer["html"]
