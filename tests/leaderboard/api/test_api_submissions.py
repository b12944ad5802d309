"""POST and GET /api/v1/submissions: token auth for writes, field-level 400s, the same service as
the form, and the per-user throttle."""

from __future__ import annotations

import pytest

from leaderboard.models import Job
from tests.support.api_clients import SPECULATIVE

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


@pytest.mark.parametrize(
    ("config_changes", "field", "fragment"),
    [
        ({"n_max": 16}, "n_max", "out of range"),
        ({"target_model": "missing.gguf"}, "target_model", "not a registered model"),
        ({"draft_model": "tiny-dflash-draft-premerge.gguf"}, "draft_model", "pre-merge"),
        ({"spec_types": "draft-warp"}, "spec_types", "unknown speculative type"),
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
