"""Celery tasks: thin wrappers around one runner function or one service.

`run_benchmark_job` runs on a GPU worker (queue `gpu.<hardware-slug>`) and never touches the
database: it hands the job message to `runner.jobs.run_job` and sends what comes back (progress
as it happens, then the result or the failure) through the broker to the `record_*` tasks on the
`db` queue.
"""

from __future__ import annotations

import logging
from pathlib import Path

from celery import shared_task
from celery.worker import state as worker_state
from django.conf import settings
from django.db import InterfaceError, OperationalError

from leaderboard import selectors, services
from leaderboard.messaging import dispatch
from leaderboard.messaging.broker import active_task_ids, broker_holdings, forget_unacked
from leaderboard.messaging.celery import RECONCILE_EVERY_S, SITE_QUEUE
from runner import jobs

logger = logging.getLogger(__name__)

# Only infrastructure trouble is retried; a benchmark that fails is a result, not an exception.
TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError)
# A retry is a message sent again with an eta, which the transport refuses on `db` (a host's eta
# would hold messages in the db worker's memory): the db worker sends its retries to `site`,
# which only the site writes.
RETRY_ON_SITE = {"queue": SITE_QUEUE}
# A result must outlive a database outage: retry forever, at most a minute apart.
RECORD_RETRY = {
    "autoretry_for": TRANSIENT_DB_ERRORS,
    "retry_kwargs": RETRY_ON_SITE,
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "retry_jitter": False,
    "max_retries": None,
}


def _this_host() -> jobs.JobHost:
    """Where this worker keeps its models and how it reaches the Hub (its settings)."""
    return jobs.JobHost(
        models_dir=Path(settings.SPECBOARD_MODELS_DIR),
        cache_dir=Path(settings.SPECBOARD_MODEL_CACHE_DIR),
        hf_endpoint=settings.SPECBOARD_HF_ENDPOINT,
        cache_max_bytes=settings.SPECBOARD_MODEL_CACHE_BYTES,
        hf_token=settings.SPECBOARD_HF_TOKEN,
    )


@shared_task(bind=True, acks_late=True, ignore_result=True)
def run_benchmark_job(
    self,
    *,
    job_id: int,
    config: dict,
    models: dict,
    with_baseline: bool = False,
    delivery: str = "",
    gpus: list | None = None,
) -> None:
    """Run one job's config on this worker's llama-server and send the result to the db queue;
    with_baseline also measures its paired baseline in the same invocation (fidelity graded).
    Everything sent back names the message's delivery, which the site checks."""
    task_id = self.request.id
    message = {
        "job_id": job_id,
        "config": config,
        "models": models,
        "with_baseline": with_baseline,
        "gpus": gpus,
    }
    outcome = jobs.run_job(
        message,
        host=_this_host(),
        progress=lambda event: dispatch.send_progress(
            job_id=job_id, delivery=delivery, progress=event
        ),
        # Cancelling revokes the task; the threads and solo pools see that from inside a run.
        should_cancel=lambda: task_id in worker_state.revoked,
    )
    if isinstance(outcome, jobs.JobSucceeded):
        result = outcome.result.model_dump(mode="json")
        dispatch.send_result(job_id=job_id, delivery=delivery, result=result)
    elif isinstance(outcome, jobs.JobFailed):
        dispatch.send_failure(
            job_id=job_id, delivery=delivery, error=outcome.error, log_tail=outcome.log_tail
        )


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=TRANSIENT_DB_ERRORS,
    retry_kwargs=RETRY_ON_SITE,
    retry_backoff=True,
    max_retries=8,
)
def record_progress_task(
    *,
    job_id: int,
    progress: dict,
    delivery: str = "",
    sequence: int = 0,
    host: str = "",
    signature: str = "",
) -> None:
    """Store a GPU host's progress event, if that host may send it."""
    services.record_host_message(
        message=services.HostMessage(
            kind="progress",
            job_id=job_id,
            body=progress,
            host=host,
            signature=signature,
            delivery=delivery,
            sequence=sequence,
        )
    )


@shared_task(acks_late=True, ignore_result=True, **RECORD_RETRY)
def record_result_task(
    *,
    job_id: int,
    result: dict,
    delivery: str = "",
    sequence: int = 0,
    host: str = "",
    signature: str = "",
) -> None:
    """Store a GPU host's result and refresh the leaderboard, if that host claimed the job."""
    services.record_host_message(
        message=services.HostMessage(
            kind="result",
            job_id=job_id,
            body=result,
            host=host,
            signature=signature,
            delivery=delivery,
            sequence=sequence,
        )
    )


@shared_task(acks_late=True, ignore_result=True, **RECORD_RETRY)
def record_failure_task(
    *,
    job_id: int,
    error: str,
    log_tail: str = "",
    delivery: str = "",
    sequence: int = 0,
    host: str = "",
    signature: str = "",
) -> None:
    """Store a GPU host's failure with the engine's log tail, if that host claimed the job."""
    services.record_host_message(
        message=services.HostMessage(
            kind="failure",
            job_id=job_id,
            body={"error": error, "log_tail": log_tail},
            host=host,
            signature=signature,
            delivery=delivery,
            sequence=sequence,
        )
    )


@shared_task(ignore_result=True)
def reconcile_jobs_task() -> dict:
    """Re-send jobs the broker lost: queued ones it no longer holds, running ones whose worker
    died."""
    queues = list(selectors.servable_hardware().values_list("queue_name", flat=True))
    holdings = broker_holdings(queues)
    if holdings is None:
        logger.info("the broker cannot be inspected; reconciling skipped")
        return {}
    requeued = services.requeue_lost_jobs(
        held_task_ids=holdings.task_ids,
        older_than_s=RECONCILE_EVERY_S,
        reporting_job_ids=holdings.reporting_job_ids,
    )
    # Running, yet no live worker executes it and nothing will finish it: its worker died.
    executing = active_task_ids()
    orphaned: list[str] = []
    if executing is not None:
        orphaned = services.requeue_orphaned_jobs(
            executing_task_ids=executing,
            waiting_task_ids=holdings.waiting,
            finishing_job_ids=holdings.finishing_job_ids,
            older_than_s=RECONCILE_EVERY_S,
        )
        forget_unacked([holdings.unacked[t] for t in orphaned if t in holdings.unacked])
    return {"requeued": requeued, "orphaned_task_ids": orphaned}


@shared_task(ignore_result=True)
def sweep_stuck_jobs_task() -> list[int]:
    """Fail jobs still running past SPECBOARD_MAX_JOB_SECONDS."""
    return services.fail_stuck_jobs(max_seconds=settings.SPECBOARD_MAX_JOB_SECONDS)
