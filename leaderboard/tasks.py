"""Celery tasks: thin wrappers around one runner function or one service.

`run_benchmark_job` runs on a GPU worker (queue `gpu.<hardware-slug>`) and never touches the
database: what it learns goes back through the broker to the `record_*` tasks on the `db` queue.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from celery import shared_task
from celery.worker import state as worker_state
from django.conf import settings
from django.db import InterfaceError, OperationalError

from leaderboard import services
from leaderboard.celery import DB_QUEUE
from runner.benchmark import run_benchmark
from runner.config import parse_config
from runner.errors import BenchmarkCancelled, RunnerError

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 1.0
# Only infrastructure trouble is retried; a benchmark that fails is a result, not an exception.
TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError)


class _ProgressSender:
    """Forwards the runner's progress events to the db side, at most one a second per phase."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.last_phase: str | None = None
        self.last_sent = 0.0

    def __call__(self, event: dict) -> None:
        now = time.monotonic()
        done = event.get("done") == event.get("total")
        if (
            event.get("phase") == self.last_phase
            and not done
            and now - self.last_sent < PROGRESS_INTERVAL_S
        ):
            return
        self.last_phase, self.last_sent = event.get("phase"), now
        record_progress_task.apply_async(
            kwargs={"job_id": self.job_id, "progress": event}, queue=DB_QUEUE
        )


def _send_failure(job_id: int, error: str, log_tail: str = "") -> None:
    record_failure_task.apply_async(
        kwargs={"job_id": job_id, "error": error, "log_tail": log_tail}, queue=DB_QUEUE
    )


def _model_mismatch(result: dict, models: dict) -> str | None:
    reported = (result.get("provenance") or {}).get("models") or {}
    for role, expected in models.items():
        found = (reported.get(role) or {}).get("sha256")
        if expected and found and found != expected["sha256"]:
            return (
                f"{role} model {expected['path']} on this worker differs from the registered file"
            )
    return None


@shared_task(bind=True, acks_late=True, ignore_result=True)
def run_benchmark_job(self, *, job_id: int, config: dict, models: dict) -> None:
    """Run one job's config on this worker's llama-server and send the result to the db queue."""
    task_id = self.request.id
    send_progress = _ProgressSender(job_id)
    send_progress({"phase": "started"})
    try:
        result = run_benchmark(
            parse_config(config),
            models_dir=Path(settings.SPECBOARD_MODELS_DIR),
            progress=send_progress,
            # Cancelling revokes the task; the threads and solo pools see that from inside a run.
            should_cancel=lambda: task_id in worker_state.revoked,
        )
    except BenchmarkCancelled:
        logger.info("job %s cancelled", job_id)
        return
    except RunnerError as error:
        _send_failure(job_id, str(error), getattr(error, "log_tail", ""))
        return
    except Exception as error:
        logger.exception("job %s failed inside the worker", job_id)
        _send_failure(job_id, f"internal worker error: {type(error).__name__}: {error}")
        return
    if problem := _model_mismatch(result, models):
        _send_failure(job_id, problem)
        return
    record_result_task.apply_async(kwargs={"job_id": job_id, "result": result}, queue=DB_QUEUE)


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=TRANSIENT_DB_ERRORS,
    retry_backoff=True,
    max_retries=8,
)
def record_progress_task(*, job_id: int, progress: dict) -> None:
    """Store a worker's progress event."""
    services.record_progress(job_id=job_id, progress=progress)


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=TRANSIENT_DB_ERRORS,
    retry_backoff=True,
    max_retries=8,
)
def record_result_task(*, job_id: int, result: dict) -> None:
    """Store a worker's result and refresh the leaderboard."""
    services.record_result(job_id=job_id, result=result)


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=TRANSIENT_DB_ERRORS,
    retry_backoff=True,
    max_retries=8,
)
def record_failure_task(*, job_id: int, error: str, log_tail: str = "") -> None:
    """Store a worker's failure with the engine's log tail."""
    services.record_failure(job_id=job_id, error=error, log_tail=log_tail)
