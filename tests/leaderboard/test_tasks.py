"""Celery tasks: the GPU task runs the runner without a database; the db tasks call services, and
recording is retried without limit until the database answers again."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from leaderboard import services, tasks
from leaderboard.messaging import dispatch
from leaderboard.messaging.celery import app
from leaderboard.models import Job, Run
from leaderboard.services import hosts as hosts_service
from runner import jobs
from runner.errors import EngineCrashedError
from runner.gguf.inspect import sha256_file
from runner.results import BenchmarkResult

CONFIG = {
    "target_model": "tiny-qwen3.gguf",
    "protocol": {"name": "quick", "n_predict": 64, "runs": 2},
}


# What every message sent back carries besides its body: checked by the delivery test below and
# tests/leaderboard/services/test_hosts.py.
ENVELOPE = ("host", "signature", "delivery", "sequence")


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict, str]]:
    """Messages the GPU task sends back to the db queue, captured (without the delivery, the
    sequence number and the host's signature)."""
    messages: list[tuple[str, dict, str]] = []

    def capture(name, *, kwargs, queue, task_id=None):
        body = {k: v for k, v in kwargs.items() if k not in ENVELOPE}
        messages.append((name.split(".")[-1], body, queue))

    monkeypatch.setattr(dispatch, "send", capture)
    return messages


def run_task(payload: dict) -> None:
    tasks.run_benchmark_job.apply(kwargs=payload).get()


def test_the_gpu_task_sends_progress_and_result_to_the_db_queue_without_touching_the_database(
    monkeypatch, sent, make_result, tiny_models
):
    def fake_run(config, *, models_dir, progress, should_cancel, **_):
        assert models_dir == tiny_models["tiny-qwen3.gguf"].parent and not should_cancel()
        progress({"phase": "loading", "done": 0, "total": 2, "tokens": 0, "elapsed_s": 0.1})
        progress({"phase": "measuring", "done": 2, "total": 2, "tokens": 128, "elapsed_s": 1.0})
        return BenchmarkResult.model_validate(make_result(config, [10.0, 11.0]))

    monkeypatch.setattr(jobs, "run_benchmark", fake_run)
    # No django_db mark: any query here would fail the test.
    run_task(
        {
            "job_id": 7,
            "config": CONFIG,
            "models": {
                "target": {
                    "path": "tiny-qwen3.gguf",
                    "sha256": sha256_file(tiny_models["tiny-qwen3.gguf"]),
                }
            },
        }
    )

    assert [name for name, _, _ in sent] == [
        "record_progress_task",
        "record_progress_task",
        "record_progress_task",
        "record_result_task",
    ]
    assert {queue for _, _, queue in sent} == {"db"}
    assert sent[0][1] == {"job_id": 7, "progress": {"phase": "started"}}
    assert sent[-1][1]["result"]["summary"]["decode_tokens_per_second"]["mean"] == pytest.approx(
        10.5
    )


def test_everything_the_gpu_task_sends_back_names_its_delivery_with_a_rising_sequence(
    monkeypatch, make_result
):
    envelopes = []
    monkeypatch.setattr(
        dispatch, "send", lambda name, *, kwargs, queue, task_id=None: envelopes.append(kwargs)
    )

    def fake_run(config, *, progress, **_):
        for done in range(3):
            progress({"phase": "measuring", "done": done, "total": 2, "elapsed_s": 0.1})
        return BenchmarkResult.model_validate(make_result(config, [10.0, 11.0]))

    monkeypatch.setattr(jobs, "run_benchmark", fake_run)
    run_task({"job_id": 7, "config": CONFIG, "models": {}, "delivery": "d" * 32})

    assert len(envelopes) >= 3 and "result" in envelopes[-1]
    assert {message["delivery"] for message in envelopes} == {"d" * 32}
    sequences = [message["sequence"] for message in envelopes]
    assert sequences == sorted(set(sequences))


def test_an_engine_crash_is_sent_as_a_failure_with_its_log_tail(monkeypatch, sent):
    def crash(config, **_):
        raise EngineCrashedError("engine crashed: exit code 134", "GGML_ASSERT failed")

    monkeypatch.setattr(jobs, "run_benchmark", crash)
    run_task({"job_id": 7, "config": CONFIG, "models": {}})

    assert sent[-1] == (
        "record_failure_task",
        {"job_id": 7, "error": "engine crashed: exit code 134", "log_tail": "GGML_ASSERT failed"},
        "db",
    )


def test_an_invalid_config_fails_the_job_instead_of_raising(sent):
    run_task({"job_id": 7, "config": {"target_model": "x"}, "models": {}})
    assert sent[-1][0] == "record_failure_task" and "invalid config" in sent[-1][1]["error"]


def test_a_model_file_that_differs_on_the_worker_is_a_failure_before_any_benchmark_runs(
    monkeypatch, sent
):
    def must_not_run(config, **_):
        raise AssertionError("a changed model file must fail before the benchmark")

    monkeypatch.setattr(jobs, "run_benchmark", must_not_run)
    run_task(
        {
            "job_id": 7,
            "config": CONFIG,
            "models": {"target": {"path": "tiny-qwen3.gguf", "sha256": "a" * 64}},
        }
    )
    assert sent[-1][0] == "record_failure_task"
    assert "sha256 mismatch" in sent[-1][1]["error"] and "tiny-qwen3.gguf" in sent[-1][1]["error"]


def test_the_db_tasks_record_through_the_services(
    user, models, hardware, enqueued, make_result, signed_by_host
):
    job = services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)
    started = {"phase": "started"}
    tasks.record_progress_task.apply(
        kwargs={"job_id": job.pk, "progress": started} | signed_by_host("progress", job.pk, started)
    ).get()
    result = make_result(job.config.key, [5.0])
    tasks.record_result_task.apply(
        kwargs={"job_id": job.pk, "result": result} | signed_by_host("result", job.pk, result)
    ).get()

    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.run.decode_mean == 5.0


def test_the_celery_app_is_configured_for_long_gpu_jobs(settings):
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    assert (
        app.conf.broker_transport_options["visibility_timeout"] > settings.SPECBOARD_MAX_JOB_SECONDS
    )
    assert app.conf.task_default_queue == "db"


@pytest.fixture
def job(user, models, hardware, enqueued) -> Job:
    return services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)


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
