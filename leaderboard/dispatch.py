"""The only code that sends or revokes Celery tasks.

Tasks are sent by name, so the services never import `leaderboard.tasks` (which imports them):
benchmark jobs go to their hardware's GPU queue under the job's own task id, and what a GPU
worker learns (progress, result, failure) goes back to the `db` queue, signed with the GPU
host's own key (SPECBOARD_HOST_NAME and SPECBOARD_HOST_KEY, issued by `register_gpu_host`). `send`
is the one call that reaches the broker; tests capture it to see what would be sent.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from leaderboard import signing
from leaderboard.celery import DB_QUEUE, app

RUN_BENCHMARK = "leaderboard.tasks.run_benchmark_job"
RECORD_PROGRESS = "leaderboard.tasks.record_progress_task"
RECORD_RESULT = "leaderboard.tasks.record_result_task"
RECORD_FAILURE = "leaderboard.tasks.record_failure_task"


def send(name: str, *, kwargs: dict, queue: str, task_id: str | None = None) -> None:
    """Send one task message by name to a queue."""
    app.send_task(name, kwargs=kwargs, queue=queue, task_id=task_id)


def send_benchmark(*, payload: dict, queue: str, task_id: str) -> None:
    """Send a job's benchmark message (again) under its own task id; the claim makes repeats safe."""
    send(RUN_BENCHMARK, kwargs=payload, queue=queue, task_id=task_id)


def send_benchmark_on_commit(*, payload: dict, queue: str, task_id: str) -> None:
    """Send a job's benchmark message once the transaction that created the job commits."""
    transaction.on_commit(
        lambda: send_benchmark(payload=payload, queue=queue, task_id=task_id), robust=True
    )


def revoke(task_id: str) -> None:
    """Tell workers to skip a task; a running benchmark sees it through its cancel check."""
    app.control.revoke(task_id)


def revoke_on_commit(task_id: str) -> None:
    """Revoke a task once the transaction that cancelled its job commits."""
    transaction.on_commit(lambda: revoke(task_id), robust=True)


def _signed(kind: str, job_id: int, body: object) -> dict:
    """This GPU host's name and its signature over one message (empty when it has no key)."""
    host, key = settings.SPECBOARD_HOST_NAME, settings.SPECBOARD_HOST_KEY
    if not key:
        return {"host": host, "signature": ""}
    return {
        "host": host,
        "signature": signing.sign(key=key, kind=kind, job_id=job_id, body=body),
    }


def send_progress(*, job_id: int, progress: dict) -> None:
    """A GPU worker's progress event, signed, to the db queue."""
    send(
        RECORD_PROGRESS,
        kwargs={"job_id": job_id, "progress": progress} | _signed("progress", job_id, progress),
        queue=DB_QUEUE,
    )


def send_result(*, job_id: int, result: dict) -> None:
    """A GPU worker's result (plain JSON), signed, to the db queue."""
    send(
        RECORD_RESULT,
        kwargs={"job_id": job_id, "result": result} | _signed("result", job_id, result),
        queue=DB_QUEUE,
    )


def send_failure(*, job_id: int, error: str, log_tail: str = "") -> None:
    """A GPU worker's failure with the engine's log tail, signed, to the db queue."""
    failure = {"error": error, "log_tail": log_tail}
    send(
        RECORD_FAILURE,
        kwargs={"job_id": job_id, **failure} | _signed("failure", job_id, failure),
        queue=DB_QUEUE,
    )
