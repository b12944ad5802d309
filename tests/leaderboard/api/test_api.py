"""The REST API: token auth for writes, field-level 400s, the same service as the form."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Job
from tests.support.seed_kit import SEED_CSV

VALID = {
    "hardware": "h200-141gb",
    "config": {
        "target_model": "tiny-qwen3.gguf",
        "draft_model": "tiny-dflash.gguf",
        "spec_types": ["draft-dflash"],
        "n_max": 8,
        "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
    },
}


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


@pytest.fixture
def client(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {issue_api_token(user=user, name='tests').key}")
    return api


def test_submitting_without_a_token_is_401(anonymous, models, hardware):
    response = anonymous.post("/api/v1/submissions", VALID, format="json")
    assert response.status_code == 401
    assert not Job.objects.exists()


def test_a_valid_submission_is_201_with_the_job(client, models, hardware, enqueued):
    response = client.post("/api/v1/submissions", VALID, format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "queued" and body["hardware"] == "h200-141gb"
    # One job: a speculative config measures its paired baseline in the same run.
    assert list(Job.objects.values_list("id", flat=True)) == [body["id"]]
    listed = client.get("/api/v1/submissions").json()
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
    client, models, hardware, enqueued, config_changes, field, fragment
):
    body = VALID | {"config": VALID["config"] | config_changes}
    response = client.post("/api/v1/submissions", body, format="json")

    assert response.status_code == 400
    assert fragment in " ".join(response.json()["config"][field])
    assert not Job.objects.exists()


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
def test_malformed_submissions_are_400_never_500(client, models, hardware, body):
    response = client.post("/api/v1/submissions", body, format="json")
    assert response.status_code == 400


def test_broken_json_is_400(client, models, hardware):
    response = client.generic(
        "POST", "/api/v1/submissions", "{not json", content_type="application/json"
    )
    assert response.status_code == 400


def test_submissions_are_throttled_per_user(client, models, hardware, enqueued, settings):
    settings.SPECBOARD_SUBMISSION_RATE = "2/minute"
    codes = [client.post("/api/v1/submissions", VALID, format="json").status_code for _ in range(3)]
    assert codes == [201, 201, 429]


def test_job_status_is_public_and_cancel_is_for_the_owner(
    client, anonymous, models, hardware, enqueued, django_user_model
):
    job_id = client.post("/api/v1/submissions", VALID, format="json").json()["id"]

    status = anonymous.get(f"/api/v1/jobs/{job_id}").json()
    assert status["status"] == "queued" and status["progress"]["percent"] == 0

    stranger = APIClient()
    stranger.force_authenticate(django_user_model.objects.create_user(username="mallory"))
    assert stranger.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 403
    assert anonymous.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 401
    assert client.post(f"/api/v1/jobs/{job_id}/cancel").json()["status"] == "cancelled"
    assert client.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 409
    assert anonymous.get("/api/v1/jobs/999999").status_code == 404


def test_csv_import_needs_a_token_and_fills_the_leaderboard(client, anonymous):
    upload = {
        "file": SimpleUploadedFile("leaderboard_runs.csv", SEED_CSV.read_bytes()),
        "hardware": "RTX PRO 6000",
    }
    assert anonymous.post("/api/v1/imports", upload, format="multipart").status_code == 401

    upload["file"].seek(0)
    response = client.post("/api/v1/imports", upload, format="multipart")

    assert response.status_code == 201, response.json()
    assert (
        response.json()["runs_created"] == 22
        and response.json()["baseline_run_name"] == "qwen3.6-27B"
    )
    board = anonymous.get(
        "/api/v1/leaderboard", {"source": "self-reported", "ordering": "speedup"}
    ).json()
    assert board["count"] == 16
    top = board["results"][0]
    assert top["label"] == "qwen36-dflash-ngram" and top["tps_definition"] == "end-to-end"
    dflash15 = next(r for r in board["results"] if r["label"] == "qwen36-dflash15")
    assert round(dflash15["speedup"], 2) == 3.60 and dflash15["baseline_config_key"]


def test_a_broken_csv_upload_is_400(client):
    upload = {"file": SimpleUploadedFile("x.csv", b"a,b\n1,2\n"), "hardware": "RTX 3090"}
    response = client.post("/api/v1/imports", upload, format="multipart")
    assert response.status_code == 400 and "missing columns" in response.json()["file"][0]


def test_read_endpoints_answer_without_a_token(
    anonymous, models, hardware, user, enqueued, make_result
):
    job = services.submit_config(owner=user, data=VALID["config"], hardware_slug=hardware.slug)
    run = services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0, 120.0]))

    assert anonymous.get("/api/v1/models").json()["count"] == 5
    assert anonymous.get("/api/v1/hardware").json()["results"][0]["served"] is True
    assert anonymous.get(f"/api/v1/configs/{job.config.key}").json()["spec_label"] == "draft-dflash"
    detail = anonymous.get(f"/api/v1/runs/{run.pk}").json()
    assert len(detail["requests"]) == 2 and detail["decode_mean"] == pytest.approx(110.0)
    assert anonymous.get("/api/v1/runs", {"config": job.config.key}).json()["count"] == 1
    assert anonymous.get("/api/v1/leaderboard", {"ordering": "bogus"}).status_code == 400


def test_the_openapi_schema_and_offline_docs_are_served(anonymous):
    schema = anonymous.get("/api/v1/schema/")
    assert schema.status_code == 200 and b"/api/v1/submissions" in schema.content
    docs = anonymous.get("/api/v1/docs/")
    assert docs.status_code == 200 and b"swagger-ui" in docs.content
    assert b"cdn.jsdelivr" not in docs.content
