"""The only code that sends or revokes Celery tasks.

Tasks are sent by name, so the services never import `leaderboard.tasks` (which imports them):
benchmark jobs go to their hardware's GPU queue under the job's own task id, each with a fresh
delivery nonce, and what a GPU worker learns (progress, result, failure) goes back to the `db`
queue with that delivery, a sequence number and a signature by the GPU host's own key
(SPECBOARD_HOST_NAME and SPECBOARD_HOST_KEY, issued by `register_gpu_host`). `send` is the one
call that reaches the broker; tests capture it to see what would be sent.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings
from django.db import transaction

from leaderboard.messaging import signing
from leaderboard.messaging.celery import (
    DB_QUEUE,
    RECORD_FAILURE,
    RECORD_PROGRESS,
    RECORD_RESULT,
    RUN_BENCHMARK,
    app,
)

__all__ = ["RECORD_FAILURE", "RECORD_PROGRESS", "RECORD_RESULT", "RUN_BENCHMARK"]

_sequence_lock = threading.Lock()
_last_sequence = 0


def send(name: str, *, kwargs: dict, queue: str, task_id: str | None = None) -> None:
    """Send one task message by name to a queue.

    Straight to the queue's list (the default exchange) and declaring nothing: a GPU host's
    broker ACL lets it push to `db` and touch no routing table (leaderboard.messaging.broker)."""
    app.send_task(
        name,
        kwargs=kwargs,
        queue=queue,
        task_id=task_id,
        exchange="",
        declare=[],
        # What logs and monitors show of the message: its job, not a repr of the whole payload
        # (which Celery would otherwise build for every message sent).
        argsrepr="()",
        kwargsrepr=f"{{'job_id': {kwargs.get('job_id')!r}, ...}}",
    )


def send_benchmark(*, payload: dict, queue: str, task_id: str) -> None:
    """Send a job's benchmark message (again) under its own task id; the claim makes repeats
    safe."""
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


def next_sequence() -> int:
    """The sequence number of this worker's next message: milliseconds since the epoch, raised
    past the last one, so a delivery's messages rise even when the broker redelivers it."""
    global _last_sequence
    with _sequence_lock:
        _last_sequence = max(_last_sequence + 1, time.time_ns() // 1_000_000)
        return _last_sequence


def _signed(kind: str, job_id: int, delivery: str, body: object) -> dict:
    """The delivery, a fresh sequence number, this GPU host's name and its signature over the
    message (empty when it has no key)."""
    host, key = settings.SPECBOARD_HOST_NAME, settings.SPECBOARD_HOST_KEY
    sequence = next_sequence()
    signature = (
        signing.sign(
            key=key, kind=kind, job_id=job_id, delivery=delivery, sequence=sequence, body=body
        )
        if key
        else ""
    )
    return {"delivery": delivery, "sequence": sequence, "host": host, "signature": signature}


def send_progress(*, job_id: int, delivery: str, progress: dict) -> None:
    """A GPU worker's progress event for one delivery of a job, signed, to the db queue."""
    signed = _signed("progress", job_id, delivery, progress)
    send(RECORD_PROGRESS, kwargs={"job_id": job_id, "progress": progress} | signed, queue=DB_QUEUE)


def send_result(*, job_id: int, delivery: str, result: dict) -> None:
    """A GPU worker's result (plain JSON) for one delivery of a job, signed, to the db queue."""
    signed = _signed("result", job_id, delivery, result)
    send(RECORD_RESULT, kwargs={"job_id": job_id, "result": result} | signed, queue=DB_QUEUE)


def send_failure(*, job_id: int, delivery: str, error: str, log_tail: str = "") -> None:
    """A GPU worker's failure with the engine's log tail for one delivery of a job, signed, to
    the db queue."""
    failure = {"error": error, "log_tail": log_tail}
    signed = _signed("failure", job_id, delivery, failure)
    send(RECORD_FAILURE, kwargs={"job_id": job_id, **failure} | signed, queue=DB_QUEUE)
