"""POST and GET /api/v1/submissions: token auth for writes, field-level 400s, the same service as
the form, and the per-user throttle; the concurrency and categories protocols queued or refused
by field; out-of-range, wrongly typed and hostile configs refused with nothing stored, queued or
run, a hostile prompt stored as inert data, and a body too large a 413; a config that does not
fit the hardware's memory a field error, and a split config queued on a kind of two GPUs; what
one submission costs in statements, and a model registered again seen by the next one."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Job
from tests.support.api_clients import HOSTILE_STRINGS, SPECULATIVE, row_counts
from tests.support.gpu_kinds import GIB, MIB
from tests.support.measured_configs import concurrency_at

VALID = {"hardware": "h200-141gb", "config": SPECULATIVE}


def test_submitting_without_a_token_is_401(anonymous, models, hardware):
    response = anonymous.post("/api/v1/submissions", VALID, format="json")
    assert response.status_code == 401
    assert not Job.objects.exists()


def test_a_valid_submission_is_201_with_the_job(signed_in, models, hardware, enqueued):
    response = signed_in.post("/api/v1/submissions", VALID, format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "queued" and body["hardware"] == "h200-141gb"
    # One job: a speculative config measures its paired baseline in the same run.
    assert list(Job.objects.values_list("id", flat=True)) == [body["id"]]
    listed = signed_in.get("/api/v1/submissions").json()
    assert {item["id"] for item in listed["results"]} == set(
        Job.objects.values_list("id", flat=True)
    )


def bench_submission(hardware, index: int) -> dict:
    """A config of its own for each index, shaped as bench/site_load.py submits them."""
    protocol = {"name": "quick", "n_predict": 8 + index, "runs": 1, "warmup": 0}
    return {
        "hardware": hardware.slug,
        "config": {"target_model": "tiny-qwen3.gguf", "protocol": protocol},
    }


def test_a_submission_of_a_new_config_costs_fourteen_statements(
    signed_in,
    models,
    hardware,
    enqueued,
    django_assert_num_queries,
    django_capture_on_commit_callbacks,
):
    # The token; the hardware kind and the model file; the user's lock and allowance, the config
    # looked up, inserted and read back, and the job, in one transaction; the job's place in the
    # queue (three reads).
    first = signed_in.post("/api/v1/submissions", bench_submission(hardware, 0), format="json")
    assert first.status_code == 201

    with django_assert_num_queries(14), django_capture_on_commit_callbacks(execute=True):
        response = signed_in.post(
            "/api/v1/submissions", bench_submission(hardware, 1), format="json"
        )

    assert response.status_code == 201, response.json()
    assert response.json()["queue_position"] == 2
    # Its message is sent once the job is committed.
    assert [sent["kwargs"]["job_id"] for sent in enqueued] == [response.json()["id"]]


def test_a_model_registered_again_is_seen_by_the_next_submission(
    signed_in, models, hardware, enqueued
):
    first = signed_in.post("/api/v1/submissions", bench_submission(hardware, 0), format="json")
    assert first.status_code == 201

    services.register_model(path="tiny-qwen3.gguf", role="draft")
    response = signed_in.post("/api/v1/submissions", bench_submission(hardware, 1), format="json")

    assert response.status_code == 400
    assert "registered as a draft" in " ".join(response.json()["config"]["target_model"])


@pytest.mark.parametrize(
    ("config_changes", "field", "fragment"),
    [
        ({"n_max": 16}, "n_max", "out of range"),
        ({"target_model": "missing.gguf"}, "target_model", "not a registered model"),
        ({"draft_model": "tiny-dflash-draft-premerge.gguf"}, "draft_model", "pre-merge"),
        ({"spec_types": "draft-warp"}, "spec_types", "unknown speculative type"),
        # In the submit form's words, not pydantic's ("Input should be greater than or equal").
        ({"n_max": 0}, "n_max", "at least 1"),
        ({"ctx_size": 300_000}, "ctx_size", "at most 262,144"),
    ],
)
def test_bad_configs_are_400_with_field_errors(
    signed_in, models, hardware, enqueued, config_changes, field, fragment
):
    body = VALID | {"config": VALID["config"] | config_changes}
    response = signed_in.post("/api/v1/submissions", body, format="json")

    assert response.status_code == 400
    assert fragment in " ".join(response.json()["config"][field])
    assert not Job.objects.exists()


def test_an_unknown_hardware_is_its_own_field_and_the_config_s_problems_nest_under_config(
    signed_in, models, hardware, enqueued
):
    body = {"hardware": "tpu", "config": SPECULATIVE | {"n_max": 16}}
    response = signed_in.post("/api/v1/submissions", body, format="json")

    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"hardware", "config"} and errors["hardware"]
    assert "n_max" in errors["config"] and "hardware" not in errors["config"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"config": "nope"},
        {"config": None},
        {"config": {}, "hardware": "tpu"},
        [1, 2],
        {"config": {"target_model": 5}},
    ],
)
def test_malformed_submissions_are_400_never_500(signed_in, models, hardware, body):
    response = signed_in.post("/api/v1/submissions", body, format="json")
    assert response.status_code == 400


def test_submissions_are_throttled_per_user(signed_in, models, hardware, enqueued, settings):
    settings.SPECBOARD_SUBMISSION_RATE = "2/minute"
    codes = [
        signed_in.post("/api/v1/submissions", VALID, format="json").status_code for _ in range(3)
    ]
    assert codes == [201, 201, 429]


# The categories protocol ----------------------------------------------------------------------


def categories_submission(hardware, **protocol) -> dict:
    return {
        "hardware": hardware.slug,
        "config": {
            "target_model": "tiny-qwen3.gguf",
            "spec_types": ["ngram-mod"],
            "protocol": {"name": "categories", "output_tokens": 16} | protocol,
        },
    }


@pytest.mark.parametrize(
    ("categories", "fragment"), [([], "at least one category"), (["poetry"], "unknown category")]
)
def test_empty_or_unknown_categories_are_a_field_error_in_the_api(
    signed_in, models, hardware, enqueued, categories, fragment
):
    response = signed_in.post(
        "/api/v1/submissions",
        categories_submission(hardware, categories=categories),
        format="json",
    )

    assert response.status_code == 400
    errors = response.json()["config"]
    assert fragment in " ".join(errors["protocol.categories.categories"])
    assert not Job.objects.exists()


# The concurrency protocol ---------------------------------------------------------------------


def concurrency_submission(hardware, **protocol) -> dict:
    return {
        "hardware": hardware.slug,
        "config": {
            "target_model": "tiny-qwen3.gguf",
            "draft_model": "tiny-dflash.gguf",
            "spec_types": ["draft-dflash"],
            "n_max": 4,
            "protocol": {"name": "concurrency", "input_tokens": 64, "output_tokens": 32} | protocol,
        },
    }


def test_the_api_queues_a_concurrency_config(signed_in, models, hardware, enqueued):
    response = signed_in.post(
        "/api/v1/submissions", concurrency_submission(hardware, levels=[1, 2]), format="json"
    )

    assert response.status_code == 201, response.json()
    job = Job.objects.get(pk=response.json()["id"])
    assert job.config.protocol == "concurrency"
    assert job.config.canonical["protocol"]["levels"] == [1, 2]


@pytest.mark.parametrize(
    ("levels", "fragment"),
    [([1, 128], "slot limit"), ([4, 2], "strictly increasing"), ([], "at least one")],
)
def test_bad_levels_are_a_field_error_in_the_api_and_queue_nothing(
    signed_in, models, hardware, enqueued, levels, fragment
):
    response = signed_in.post(
        "/api/v1/submissions", concurrency_submission(hardware, levels=levels), format="json"
    )

    assert response.status_code == 400
    errors = response.json()["config"]
    (field,) = [name for name in errors if name.startswith("protocol.")]
    assert field.endswith(".levels") and fragment in " ".join(errors[field])
    assert not Job.objects.exists()


# Hostile and malformed configs ----------------------------------------------------------------


def submit(api: APIClient, body) -> object:
    return api.post("/api/v1/submissions", body, format="json")


@pytest.mark.parametrize(
    ("config_changes", "field"),
    [
        ({"n_max": 0}, "n_max"),
        ({"n_max": 65}, "n_max"),
        ({"n_max": "eight"}, "n_max"),
        ({"n_max": 2**70}, "n_max"),
        ({"ctx_size": 10}, "ctx_size"),
        ({"ctx_size": 10**9}, "ctx_size"),
        # The tiny target was trained on 4096 tokens of context.
        ({"ctx_size": 8192}, "ctx_size"),
        ({"target_model": "unregistered.gguf"}, "target_model"),
        ({"target_model": "../../etc/passwd"}, "target_model"),
        ({"target_model": "/etc/passwd.gguf"}, "target_model"),
        ({"target_model": "../outside/x.gguf"}, "target_model"),
        ({"draft_model": ["tiny-dflash.gguf"]}, "draft_model"),
        ({"spec_types": {"a": 1}}, "spec_types"),
        ({"protocol": {"name": "quick", "runs": -1}}, "protocol.quick.runs"),
        ({"protocol": "quick"}, "protocol"),
        ({"cache_type_k": "q8_0; rm -rf /"}, "cache_type_k"),
    ],
)
def test_out_of_range_and_wrongly_typed_configs_are_400_with_the_field(
    signed_in, models, hardware, enqueued, no_subprocess, config_changes, field
):
    before = row_counts()
    response = submit(
        signed_in, {"hardware": hardware.slug, "config": SPECULATIVE | config_changes}
    )

    assert response.status_code == 400
    assert field in response.json()["config"], response.json()
    assert row_counts() == before and enqueued == []


@pytest.mark.parametrize("text", HOSTILE_STRINGS)
def test_hostile_text_in_every_submission_field_is_refused_and_nothing_runs(
    signed_in, models, hardware, enqueued, no_subprocess, text
):
    before = row_counts()
    bodies = [
        {"hardware": text, "config": SPECULATIVE},
        {"hardware": hardware.slug, "config": SPECULATIVE | {"target_model": text}},
        {"hardware": hardware.slug, "config": SPECULATIVE | {"draft_model": text}},
        {"hardware": hardware.slug, "config": SPECULATIVE | {"spec_types": [text]}},
        {"hardware": hardware.slug, "config": SPECULATIVE | {"flash_attn": text}},
        {"hardware": hardware.slug, "config": SPECULATIVE | {text: 1}},
    ]
    for body in bodies:
        response = submit(signed_in, body)
        assert response.status_code == 400, (body, response.json())
    assert row_counts() == before and enqueued == [] and no_subprocess == []


@pytest.mark.parametrize("text", HOSTILE_STRINGS)
def test_hostile_prompt_is_stored_as_inert_data(
    signed_in, models, hardware, enqueued, no_subprocess, text
):
    protocol = {"name": "quick", "n_predict": 64, "runs": 3, "prompt": text}
    response = submit(
        signed_in, {"hardware": hardware.slug, "config": SPECULATIVE | {"protocol": protocol}}
    )

    assert response.status_code == 201
    job = Job.objects.get(pk=response.json()["id"])
    assert job.config.canonical["protocol"]["prompt"] == text
    assert no_subprocess == []
    page = signed_in.get(f"/configs/{job.config.key}/")
    if page.status_code == 200 and text.startswith("<"):
        assert b"<script>alert(1)</script>" not in page.content


def test_huge_json_bodies_are_413(signed_in, models, hardware, settings):
    before = row_counts()
    protocol = {"name": "quick", "prompt": "x" * (settings.SPECBOARD_MAX_JSON_BYTES + 10)}
    response = submit(
        signed_in, {"hardware": hardware.slug, "config": SPECULATIVE | {"protocol": protocol}}
    )
    assert response.status_code == 413 and "detail" in response.json()
    assert row_counts() == before


def test_the_api_gives_the_field_error(user, models, hardware, client):
    hardware.memory_bytes = 16 * MIB
    hardware.save()
    key = issue_api_token(user=user, name="memory").key

    response = client.post(
        "/api/v1/submissions",
        {"config": concurrency_at([1, 8, 64]), "hardware": hardware.slug},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )

    assert response.status_code == 400
    assert "MiB this hardware has" in json.dumps(response.json())
    assert not Job.objects.exists()


def test_the_api_takes_a_split_config_and_names_a_kinds_gpus(user, models, two_3090s, client):
    from leaderboard.accounts.services import issue_api_token

    key = issue_api_token(user=user, name="multi-gpu").key
    data = {
        "target_model": "tiny-qwen3.gguf",
        "split_mode": "row",
        "tensor_split": "3,1",
        "main_gpu": 1,
    }
    response = client.post(
        "/api/v1/submissions",
        {"config": data, "hardware": two_3090s.slug},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert response.status_code == 201, response.content
    job = Job.objects.get()
    assert job.hardware == two_3090s
    assert (job.config.canonical["split_mode"], job.config.canonical["main_gpu"]) == ("row", 1)

    refused = client.post(
        "/api/v1/submissions",
        {"config": data | {"main_gpu": 2}, "hardware": two_3090s.slug},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert refused.status_code == 400
    assert "this hardware has 2 GPUs" in json.dumps(refused.json())

    kinds = {kind["slug"]: kind for kind in client.get("/api/v1/hardware").json()["results"]}
    kind = kinds["2x-rtx-3090-24gb"]
    assert (kind["gpu_count"], kind["label"]) == (2, "2x RTX 3090 24GB")
    assert [gpu["memory_bytes"] for gpu in kind["gpus"]] == [24 * GIB, 24 * GIB]
