"""Job status moves only by guarded updates; results are recorded once per job; a GPU host's
failure message is stored as bounded text whatever it carries (NUL characters, which
PostgreSQL's text columns refuse, or no string at all), and the job's pages still show."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from rest_framework.test import APIClient

from leaderboard import services, tasks
from leaderboard.models import Job, LeaderboardEntry, RequestRecord, Run

BASELINE = {
    "target_model": "tiny-qwen3.gguf",
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


@pytest.fixture
def job(user, models, hardware, enqueued) -> Job:
    return services.submit_config(owner=user, data=BASELINE, hardware_slug=hardware.slug)


def test_a_second_claim_of_the_same_job_fails(job):
    assert services.claim_job(job_id=job.pk) is True
    assert services.claim_job(job_id=job.pk) is False

    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.attempts == 1 and job.started_at is not None


def test_progress_events_update_a_running_job(job):
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    services.record_progress(
        job_id=job.pk,
        progress={
            "phase": "measuring",
            "done": 2,
            "total": 4,
            "tokens": 300,
            "elapsed_s": 1.5,
            "junk": 1,
        },
    )

    job.refresh_from_db()
    assert job.progress == {
        "phase": "measuring",
        "done": 2,
        "total": 4,
        "tokens": 300,
        "elapsed_s": 1.5,
    }


def test_a_redelivered_job_counts_attempts_and_gives_up(job, settings):
    settings.SPECBOARD_MAX_ATTEMPTS = 2
    for _ in range(3):
        services.record_progress(job_id=job.pk, progress={"phase": "started"})

    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "lost workers" in job.error


def test_record_result_is_idempotent_per_job(job, make_result):
    result = make_result(job.config.key, [100.0, 110.0, 120.0])

    first = services.record_result(job_id=job.pk, result=result)
    second = services.record_result(job_id=job.pk, result=result)

    job.refresh_from_db()
    assert first is not None and second is None
    assert job.status == Job.Status.SUCCEEDED
    assert Run.objects.count() == 1 and RequestRecord.objects.count() == 3
    assert first.decode_mean == pytest.approx(110.0) and first.n == 3
    first.hardware.refresh_from_db()
    assert first.hardware.driver == "580.1" and first.engine_release == "b11434"


def test_progress_after_the_result_does_not_reopen_the_job(job, make_result):
    services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0]))
    assert (
        services.record_progress(job_id=job.pk, progress={"phase": "measuring", "done": 1}) is False
    )

    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED


def test_a_failure_keeps_the_reason_and_log_tail_and_discards_a_late_result(job, make_result):
    services.record_failure(
        job_id=job.pk, error="engine crashed: exit 134", log_tail="GGML_ASSERT failed"
    )
    assert services.record_result(job_id=job.pk, result=make_result(job.config.key, [1.0])) is None

    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.error == "engine crashed: exit 134" and job.log_tail == "GGML_ASSERT failed"
    assert not Run.objects.exists()


def test_a_result_from_a_different_model_file_fails_the_job(job, make_result):
    services.record_result(
        job_id=job.pk, result=make_result(job.config.key, [1.0], target_sha256="0" * 64)
    )

    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "differs from the registered file" in job.error


def test_only_the_owner_cancels_and_a_cancelled_job_discards_its_result(
    job, make_result, django_user_model
):
    stranger = django_user_model.objects.create_user(username="mallory")
    with pytest.raises(PermissionDenied):
        services.cancel_job(job=job, user=stranger)

    assert services.cancel_job(job=job, user=job.owner) is True
    assert services.cancel_job(job=job, user=job.owner) is False
    assert services.claim_job(job_id=job.pk) is False
    assert services.record_result(job_id=job.pk, result=make_result(job.config.key, [1.0])) is None
    assert not LeaderboardEntry.objects.exists()


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
    job = services.submit_config(owner=user, data=BASELINE, hardware_slug=hardware.slug)
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
