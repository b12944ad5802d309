"""Celery tasks: thin wrappers around one runner function or one service.

`run_benchmark_job` runs on a GPU worker (queue `gpu.<hardware-slug>`) and never touches the
database: what it learns goes back through the broker to the `record_*` tasks on the `db` queue.
"""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path

from celery import shared_task
from celery.worker import state as worker_state
from django.conf import settings
from django.db import InterfaceError, OperationalError

from leaderboard import dispatch, selectors, services
from leaderboard.broker import active_task_ids, broker_holdings, forget_unacked
from leaderboard.celery import RECONCILE_EVERY_S
from runner.benchmark import resolve_model, run_benchmark
from runner.config import parse_config
from runner.errors import BenchmarkCancelled, ModelCheckError, RunnerError
from runner.gguf.inspect import sha256_file
from runner.hub import HubFile
from runner.model_cache import ModelCache, download_progress
from runner.results import BenchmarkResult

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 1.0
# Only infrastructure trouble is retried; a benchmark that fails is a result, not an exception.
TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError)
# A result must outlive a database outage: retry forever, at most a minute apart.
RECORD_RETRY = {
    "autoretry_for": TRANSIENT_DB_ERRORS,
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "retry_jitter": False,
    "max_retries": None,
}


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
        dispatch.send_progress(job_id=self.job_id, progress=event)


def _model_mismatch(result: BenchmarkResult, models: dict) -> str | None:
    reported = result.provenance.models
    for role, found in (("target", reported.target), ("draft", reported.draft)):
        expected = models.get(role)
        if expected and found and found.sha256 != expected["sha256"]:
            return (
                f"{role} model {expected['path']} on this worker differs from the registered file"
            )
    return None


def _changed_model_file(models: dict) -> str | None:
    base = Path(settings.SPECBOARD_MODELS_DIR)
    for role, expected in models.items():
        if expected and expected.get("hf_repo"):
            continue  # a Hub file is checked by the model cache as it is fetched
        if expected and sha256_file(resolve_model(expected["path"], base)) != expected["sha256"]:
            return (
                f"{role} model {expected['path']} on this worker differs from the registered "
                "file (sha256 mismatch): it was changed after registration"
            )
    return None


def _fetch_hub_models(models: dict, *, progress, held: contextlib.ExitStack) -> Path:
    """Fetch a job's Hugging Face models into this host's model cache (resumed, size and sha256
    checked, download progress sent as job progress) and hold them in `held`; returns the
    models directory the benchmark runs in."""
    models_dir = Path(settings.SPECBOARD_MODELS_DIR)
    hub = {role: row for role, row in models.items() if row and row.get("hf_repo")}
    if not hub:
        return models_dir
    cache = ModelCache(
        settings.SPECBOARD_MODEL_CACHE_DIR,
        endpoint=settings.SPECBOARD_HF_ENDPOINT,
        max_bytes=settings.SPECBOARD_MODEL_CACHE_BYTES,
        token=settings.SPECBOARD_HF_TOKEN,
    )
    mixed = any(row and not row.get("hf_repo") for row in models.values())
    if mixed and cache.root.resolve() != models_dir.resolve():
        raise ModelCheckError(
            "this job mixes a local model and a Hugging Face one: on this host "
            "SPECBOARD_MODEL_CACHE_DIR must be SPECBOARD_MODELS_DIR (its default)"
        )
    report = download_progress(progress)
    for row in hub.values():
        hub_file = HubFile(
            repo=row["hf_repo"],
            file=row["hf_file"],
            revision=row["hf_revision"],
            size_bytes=row["size_bytes"],
            sha256=row["sha256"],
        )
        held.enter_context(cache.in_use(cache.fetch(hub_file, progress=report)))
    return cache.root


@shared_task(bind=True, acks_late=True, ignore_result=True)
def run_benchmark_job(
    self, *, job_id: int, config: dict, models: dict, with_baseline: bool = False
) -> None:
    """Run one job's config on this worker's llama-server and send the result to the db queue;
    with_baseline also measures its paired baseline in the same invocation (fidelity graded)."""
    task_id = self.request.id
    send_progress = _ProgressSender(job_id)
    send_progress({"phase": "started"})
    held = contextlib.ExitStack()
    try:
        # Hugging Face models first: fetched into this host's cache (size and sha256 checked)
        # and held there until the benchmark is over, so that eviction leaves them alone.
        models_dir = _fetch_hub_models(models, progress=send_progress, held=held)
        # The registered hash, checked before the run: a changed file must not cost a benchmark.
        if problem := _changed_model_file(models):
            dispatch.send_failure(job_id=job_id, error=problem)
            return
        result = run_benchmark(
            parse_config(config),
            models_dir=models_dir,
            with_baseline=with_baseline,
            progress=send_progress,
            # Cancelling revokes the task; the threads and solo pools see that from inside a run.
            should_cancel=lambda: task_id in worker_state.revoked,
        )
    except BenchmarkCancelled:
        logger.info("job %s cancelled", job_id)
        return
    except RunnerError as error:
        dispatch.send_failure(
            job_id=job_id, error=str(error), log_tail=getattr(error, "log_tail", "")
        )
        return
    except Exception as error:
        logger.exception("job %s failed inside the worker", job_id)
        dispatch.send_failure(
            job_id=job_id, error=f"internal worker error: {type(error).__name__}: {error}"
        )
        return
    finally:
        held.close()
    if problem := _model_mismatch(result, models):
        dispatch.send_failure(job_id=job_id, error=problem)
        return
    dispatch.send_result(job_id=job_id, result=result.model_dump(mode="json"))


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=TRANSIENT_DB_ERRORS,
    retry_backoff=True,
    max_retries=8,
)
def record_progress_task(
    *, job_id: int, progress: dict, host: str = "", signature: str = ""
) -> None:
    """Store a GPU host's progress event, if that host may send it."""
    if services.accept_host_message(
        kind="progress", job_id=job_id, body=progress, host=host, signature=signature
    ):
        services.record_progress(job_id=job_id, progress=progress)


@shared_task(acks_late=True, ignore_result=True, **RECORD_RETRY)
def record_result_task(*, job_id: int, result: dict, host: str = "", signature: str = "") -> None:
    """Store a GPU host's result and refresh the leaderboard, if that host claimed the job."""
    if services.accept_host_message(
        kind="result", job_id=job_id, body=result, host=host, signature=signature
    ):
        services.record_result(job_id=job_id, result=result)


@shared_task(acks_late=True, ignore_result=True, **RECORD_RETRY)
def record_failure_task(
    *, job_id: int, error: str, log_tail: str = "", host: str = "", signature: str = ""
) -> None:
    """Store a GPU host's failure with the engine's log tail, if that host claimed the job."""
    failure = {"error": error, "log_tail": log_tail}
    if services.accept_host_message(
        kind="failure", job_id=job_id, body=failure, host=host, signature=signature
    ):
        services.record_failure(job_id=job_id, error=error, log_tail=log_tail)


@shared_task(ignore_result=True)
def reconcile_jobs_task() -> dict:
    """Re-send jobs the broker lost: queued ones it no longer holds, running ones whose worker died."""
    queues = list(selectors.servable_hardware().values_list("queue_name", flat=True))
    holdings = broker_holdings(queues)
    if holdings is None:
        logger.info("the broker cannot be inspected; reconciling skipped")
        return {}
    requeued = services.requeue_lost_jobs(
        held_task_ids=holdings.task_ids, older_than_s=RECONCILE_EVERY_S
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
