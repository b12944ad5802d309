"""GET /api/v1/jobs/<id> and POST /api/v1/jobs/<id>/cancel: a job's status is public, cancelling
is its owner's, a finished job cannot be cancelled (409), and a queued job says its place in the
queue and its estimated start."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
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


def test_the_job_api_has_queue_position_and_estimated_start(first_job, job_factory):
    job_factory("succeeded", minute=1, started=0, took=90)
    mine = job_factory("queued", minute=200)
    api = APIClient()
    body = api.get(f"/api/v1/jobs/{mine.pk}").json()
    assert body["queue_position"] == 2
    start = timezone.datetime.fromisoformat(body["estimated_start"])
    # One job ahead (the first job) of the median's 90 s: it should start in 90 s.
    assert timedelta(seconds=80) < start - timezone.now() <= timedelta(seconds=90)
    done = job_factory("succeeded", minute=2, started=0, took=60)
    body = api.get(f"/api/v1/jobs/{done.pk}").json()
    assert body["queue_position"] is None and body["estimated_start"] is None
