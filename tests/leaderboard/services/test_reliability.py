"""The periodic reconciler and sweeper, retried recording, baseline reuse and job cost."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from leaderboard import selectors, services, tasks
from leaderboard.celery import app
from leaderboard.models import Job, Run
from leaderboard.services import hosts as hosts_service

BASELINE = {
    "target_model": "tiny-qwen3.gguf",
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}
DFLASH = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}
# Synthetic acceptance does not measure its baseline beside itself: it shares a baseline job.
SYNTHETIC = DFLASH | {"spec_synth_len": 2.0}


@pytest.fixture
def job(user, models, hardware, enqueued) -> Job:
    job = services.submit_config(owner=user, data=BASELINE, hardware_slug=hardware.slug)
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    return job


@pytest.fixture
def revoked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    ids: list[str] = []
    monkeypatch.setattr(app.control, "revoke", lambda task_id, **_: ids.append(task_id))
    return ids


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


def test_a_result_is_recorded_once_the_database_answers_again(
    job, make_result, monkeypatch, signed_by_host
):
    record = services.record_result
    outages = []

    def database_down_twice(**kwargs):
        if len(outages) < 2:
            outages.append(1)
            raise OperationalError("could not connect to server: Connection refused")
        return record(**kwargs)

    # Where the host message service looks it up: accepting and recording are one transaction,
    # so each retry of the same signed message is accepted again (not taken for a replay).
    monkeypatch.setattr(hosts_service, "record_result", database_down_twice)
    result = make_result(job.config.key, [50.0, 51.0])
    tasks.record_result_task.apply(
        kwargs={"job_id": job.pk, "result": result} | signed_by_host("result", job.pk, result)
    ).get()

    job.refresh_from_db()
    assert len(outages) == 2
    assert job.status == Job.Status.SUCCEEDED and Run.objects.filter(job=job).count() == 1


def test_recording_is_retried_without_limit_and_at_most_a_minute_apart():
    for task in (tasks.record_result_task, tasks.record_failure_task):
        assert task.max_retries is None and task.retry_backoff_max == 60
        assert OperationalError in task.autoretry_for


def test_synthetic_jobs_that_share_a_target_context_and_protocol_reuse_one_baseline(
    user, models, hardware, enqueued, make_result
):
    dflash = services.submit_config(owner=user, data=SYNTHETIC, hardware_slug=hardware.slug)
    shorter = services.submit_config(
        owner=user, data=SYNTHETIC | {"n_max": 4}, hardware_slug=hardware.slug
    )
    self_draft = services.submit_config(
        owner=user,
        data=SYNTHETIC | {"draft_model": "tiny-qwen3.gguf", "spec_types": ["draft-simple"]},
        hardware_slug=hardware.slug,
    )
    baseline_jobs = Job.objects.filter(auto_scheduled=True)
    assert dflash.config.baseline == shorter.config.baseline == self_draft.config.baseline
    assert baseline_jobs.count() == 1

    baseline_job = baseline_jobs.get()
    services.record_result(
        job_id=baseline_job.pk, result=make_result(baseline_job.config.key, [100.0])
    )
    later = services.submit_config(
        owner=user, data=SYNTHETIC | {"n_max": 2}, hardware_slug=hardware.slug
    )
    assert later.config.baseline == dflash.config.baseline
    assert Job.objects.filter(auto_scheduled=True).count() == 1

    # A different protocol measures something else: it gets a baseline of its own.
    other = services.submit_config(
        owner=user,
        data=SYNTHETIC | {"protocol": {"name": "quick", "n_predict": 32, "runs": 3}},
        hardware_slug=hardware.slug,
    )
    assert other.config.baseline != dflash.config.baseline
    assert Job.objects.filter(auto_scheduled=True).count() == 2


def test_a_finished_job_shows_its_gpu_and_engine_seconds(job, make_result):
    result = make_result(job.config.key, [100.0])
    result["summary"]["engine_seconds"] = 14.0
    services.record_result(job_id=job.pk, result=result)

    status = selectors.job_status(job=selectors.job_by_id(job_id=job.pk))

    assert status["gpu_seconds"] == 12.5 and status["engine_seconds"] == 14.0


def test_a_job_shows_its_token_budget_before_it_runs_and_its_cost_after(
    client, user, job, make_result
):
    from runner.config import parse_config
    from runner.protocols import token_budget

    expected = token_budget(parse_config(job.config.canonical))
    client.force_login(user)

    queued = client.get(f"/api/v1/jobs/{job.pk}").json()
    assert queued["status"] == "queued"
    assert queued["token_budget"] == expected and expected["total_tokens"] > 0
    assert queued["gpu_seconds"] is None
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"about {expected['total_tokens']} tokens" in page and "GPU-seconds" not in page

    services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0]))

    finished = client.get(f"/api/v1/jobs/{job.pk}").json()
    assert finished["gpu_seconds"] == 12.5 and finished["token_budget"] == expected
    assert "12.5 GPU-seconds" in client.get(f"/jobs/{job.pk}/").content.decode()
    listing = client.get("/jobs/").content.decode()
    assert "12.5 GPU-s" in listing and str(expected["total_tokens"]) in listing


def test_simultaneous_submissions_that_share_a_baseline_queue_it_once(
    transactional_db, user, models, hardware, enqueued
):
    import threading

    from django.db import connection, connections

    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (CI runs on it)")
    # The first submission creates the shared baseline config; the race is over its job.
    Job.objects.all().delete()
    services.submit_config(owner=user, data=SYNTHETIC | {"n_max": 1}, hardware_slug=hardware.slug)
    Job.objects.all().delete()
    start = threading.Barrier(6)
    errors = []

    def submit(n_max: int) -> None:
        try:
            start.wait()
            services.submit_config(
                owner=user, data=SYNTHETIC | {"n_max": n_max}, hardware_slug=hardware.slug
            )
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit, args=(n,)) for n in range(2, 8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert Job.objects.filter(auto_scheduled=False).count() == 6
    assert Job.objects.filter(auto_scheduled=True).count() == 1


def test_a_running_job_shows_the_engines_recent_log_live(client, job):
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    services.record_progress(
        job_id=job.pk,
        progress={"phase": "measuring", "done": 1, "total": 4, "log_tail": "slot 0: prompt done"},
    )

    assert client.get(f"/api/v1/jobs/{job.pk}").json()["log_tail"] == "slot 0: prompt done"
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "live, while it runs" in page and "slot 0: prompt done" in page
