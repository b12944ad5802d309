"""Job status moves only by guarded updates; results are recorded once per job; a GPU host's
failure message is stored as bounded text whatever it carries (NUL characters, which
PostgreSQL's text columns refuse, or no string at all), and the job's pages still show. The
periodic reconciler sends again what the broker lost and queues again a job whose worker died
(failing it after too many attempts), the sweeper fails jobs past their time limit, and a running
job shows the engine's recent log."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import services, tasks
from leaderboard.messaging.celery import app
from leaderboard.models import Job, LeaderboardEntry, RequestRecord, Run

BASELINE = {
    "target_model": "tiny-qwen3.gguf",
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


@pytest.fixture
def job(user, models, hardware, enqueued) -> Job:
    """A queued job, submitted five minutes ago: old enough for the reconciler to look at."""
    job = services.submit_config(owner=user, data=BASELINE, hardware_slug=hardware.slug)
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    return job


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


DFLASH = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


@pytest.fixture
def revoked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    ids: list[str] = []
    monkeypatch.setattr(app.control, "revoke", lambda task_id, **_: ids.append(task_id))
    return ids


# The periodic reconciler and sweeper ------------------------------------------------------


def test_the_reconciler_resends_a_queued_job_that_the_broker_lost(job, enqueued):
    assert services.requeue_lost_jobs(held_task_ids=set(), older_than_s=60) == [job.pk]

    assert enqueued[-1]["task_id"] == str(job.task_id)
    assert enqueued[-1]["queue"] == job.hardware.queue_name
    assert enqueued[-1]["kwargs"]["job_id"] == job.pk


def test_the_reconciler_leaves_jobs_the_broker_holds_or_that_are_new_or_running(job, enqueued):
    sent_before = len(enqueued)
    assert services.requeue_lost_jobs(held_task_ids={str(job.task_id)}, older_than_s=60) == []
    assert services.requeue_lost_jobs(held_task_ids=set(), older_than_s=3600) == []
    services.claim_job(job_id=job.pk)
    assert services.requeue_lost_jobs(held_task_ids=set(), older_than_s=60) == []
    assert len(enqueued) == sent_before


def test_a_running_job_whose_worker_died_is_queued_again(job, enqueued):
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(minutes=2))

    handled = services.requeue_orphaned_jobs(
        executing_task_ids=set(), waiting_task_ids=set(), finishing_job_ids=set(), older_than_s=30
    )

    job.refresh_from_db()
    assert handled == [str(job.task_id)]
    assert job.status == Job.Status.QUEUED and job.progress == {"phase": "requeued"}
    assert enqueued[-1]["task_id"] == str(job.task_id)
    # The next worker claims it as a second attempt.
    assert services.claim_job(job_id=job.pk) and Job.objects.get(pk=job.pk).attempts == 2


def test_a_running_job_that_a_worker_executes_or_whose_result_is_on_its_way_stays(job, enqueued):
    services.claim_job(job_id=job.pk)
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(minutes=2))
    task_id = str(job.task_id)
    for executing, finishing in (({task_id}, set()), (set(), {job.pk})):
        assert not services.requeue_orphaned_jobs(
            executing_task_ids=executing,
            waiting_task_ids=set(),
            finishing_job_ids=finishing,
            older_than_s=30,
        )
    assert Job.objects.get(pk=job.pk).status == Job.Status.RUNNING


def test_a_job_that_keeps_losing_its_worker_fails_with_the_reason(job, enqueued, settings):
    settings.SPECBOARD_MAX_ATTEMPTS = 2
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING, attempts=2, started_at=timezone.now() - timedelta(minutes=2)
    )

    services.requeue_orphaned_jobs(
        executing_task_ids=set(), waiting_task_ids=set(), finishing_job_ids=set(), older_than_s=30
    )

    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.error == "worker lost: gave up after 2 attempts whose worker died"


def test_the_sweeper_fails_jobs_running_past_their_time_limit(
    user, models, hardware, enqueued, revoked, settings
):
    settings.SPECBOARD_MAX_JOB_SECONDS = 600
    stuck = services.submit_config(owner=user, data=BASELINE, hardware_slug=hardware.slug)
    fresh = services.submit_config(owner=user, data=DFLASH, hardware_slug=hardware.slug)
    for row, started in ((stuck, timedelta(hours=1)), (fresh, timedelta(minutes=1))):
        Job.objects.filter(pk=row.pk).update(
            status=Job.Status.RUNNING, started_at=timezone.now() - started
        )

    assert tasks.sweep_stuck_jobs_task.apply().get() == [stuck.pk]

    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.status == Job.Status.FAILED and stuck.finished_at is not None
    assert stuck.error.startswith("timed out: still running 600 s after it started")
    assert fresh.status == Job.Status.RUNNING
    assert revoked == [str(stuck.task_id)]


def test_a_running_job_shows_the_engines_recent_log_live(client, job):
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    services.record_progress(
        job_id=job.pk,
        progress={"phase": "measuring", "done": 1, "total": 4, "log_tail": "slot 0: prompt done"},
    )

    assert client.get(f"/api/v1/jobs/{job.pk}").json()["log_tail"] == "slot 0: prompt done"
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "live, while it runs" in page and "slot 0: prompt done" in page
