"""A GPU host's failure message is stored as bounded text whatever it carries (NUL characters,
which PostgreSQL's text columns refuse, or no string at all), and the job's pages still show."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard import services, tasks
from leaderboard.models import Job

CONFIG = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 8}}


@pytest.mark.parametrize(
    ("error", "log_tail", "stored_error", "stored_log"),
    [
        (
            "engine\x00 crashed",
            "line\x00one\n" * 2000,
            "engine crashed",
            ("lineone\n" * 2000)[-8000:],
        ),
        (12345, None, "12345", ""),
        ({"why": "no"}, ["a", "b"], "{'why': 'no'}", "['a', 'b']"),
        ("\x00\x00", "", "failed", ""),
    ],
)
def test_a_hosts_failure_is_stored_as_text_and_the_job_still_shows(
    user, models, hardware, signed_by_host, client, error, log_tail, stored_error, stored_log
):
    job = services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    body = {"error": error, "log_tail": log_tail}

    tasks.record_failure_task.apply(
        kwargs={"job_id": job.pk, **body, **signed_by_host("failure", job.pk, body)}
    ).get()

    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.error == stored_error and job.log_tail == stored_log
    client.force_login(user)
    assert client.get(f"/jobs/{job.pk}/").status_code == 200
    api = APIClient()
    api.force_authenticate(user)
    assert api.get(f"/api/v1/jobs/{job.pk}").status_code == 200
