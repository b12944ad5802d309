"""A GPU host's progress events as the site receives them (the signed Celery task), and every
surface that shows a job's progress: the job page, My jobs, /hosts/, the job and hosts API."""

from __future__ import annotations

import json

from rest_framework.test import APIClient

from leaderboard import tasks
from leaderboard.models import Job


def strict_json(text: str) -> object:
    """JSON as a browser's JSON.parse reads it: NaN and Infinity are not JSON."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def post_progress(job: Job, progress: object, signed_by_host) -> None:
    """A progress event through the real task path, signed by the host that claimed the job."""
    signature = signed_by_host("progress", job.pk, progress)
    tasks.record_progress_task.apply(
        kwargs={"job_id": job.pk, "progress": progress} | signature
    ).get()


def assert_every_surface_answers(client, job: Job) -> dict:
    """The job page, My jobs, /hosts/, the job API and the hosts API: no 5xx, strict JSON; the
    job resource's body."""
    client.force_login(job.owner)
    for url in (f"/jobs/{job.pk}/", "/jobs/", "/hosts/"):
        response = client.get(url)
        assert response.status_code == 200, url
    hosts = APIClient().get("/api/v1/hosts")
    assert hosts.status_code == 200
    strict_json(hosts.content.decode())
    response = APIClient().get(f"/api/v1/jobs/{job.pk}")
    assert response.status_code == 200
    return strict_json(response.content.decode())
