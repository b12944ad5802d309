"""GET /api/v1/jobs/<id> and POST /api/v1/jobs/<id>/cancel: a job's status is public, cancelling
is its owner's, and a finished job cannot be cancelled (409)."""

from __future__ import annotations

from rest_framework.test import APIClient

from tests.support.api_clients import SPECULATIVE


def test_job_status_is_public_and_cancel_is_for_the_owner(
    signed_in, anonymous, models, hardware, enqueued, django_user_model
):
    body = {"hardware": "h200-141gb", "config": SPECULATIVE}
    job_id = signed_in.post("/api/v1/submissions", body, format="json").json()["id"]

    status = anonymous.get(f"/api/v1/jobs/{job_id}").json()
    assert status["status"] == "queued" and status["progress"]["percent"] == 0

    stranger = APIClient()
    stranger.force_authenticate(django_user_model.objects.create_user(username="mallory"))
    assert stranger.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 403
    assert anonymous.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 401
    assert signed_in.post(f"/api/v1/jobs/{job_id}/cancel").json()["status"] == "cancelled"
    assert signed_in.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 409
    assert anonymous.get("/api/v1/jobs/999999").status_code == 404


def test_cancelling_a_finished_job_says_its_status(signed_in, models, hardware, enqueued):
    body = {"hardware": "h200-141gb", "config": SPECULATIVE}
    job_id = signed_in.post("/api/v1/submissions", body, format="json").json()["id"]
    signed_in.post(f"/api/v1/jobs/{job_id}/cancel")

    refused = signed_in.post(f"/api/v1/jobs/{job_id}/cancel")

    assert refused.status_code == 409
    assert refused.json() == {"detail": f"job {job_id} has already cancelled"}
