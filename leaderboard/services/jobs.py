"""Job state: claims, progress, failures, cancels and the sweeps that keep the broker honest.

Every status change is a guarded conditional UPDATE, so two workers can never both move a job;
the database, not the broker, is the source of truth for what must run. Every job message sent,
first or again, carries a fresh delivery nonce stored on the job: what a GPU host sends back
counts only for the current one (services.hosts)."""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from leaderboard.messaging import dispatch, signing
from leaderboard.messaging.progress import clean_progress, live_log, storable_text
from leaderboard.models import (
    Config,
    Job,
    ModelFile,
)
from runner import protocols as runner_protocols

logger = logging.getLogger(__name__)


def job_payload(job: Job) -> dict:
    """All a GPU worker needs to run a job: plain JSON, no database access."""

    def model(row: ModelFile | None) -> dict | None:
        if row is None:
            return None
        hub = {"hf_repo": row.hf_repo, "hf_file": row.hf_file, "hf_revision": row.hf_revision}
        # A Hub file is fetched by the GPU host on first use: it needs where and what to expect.
        extra = hub | {"size_bytes": row.size_bytes} if row.hf_repo else {}
        return {"path": row.path, "sha256": row.sha256} | extra

    return {
        "job_id": job.pk,
        # Its suite named, so the host measures the config this row is (runner.config's
        # parse_stored_config): a first-suite categories canonical leaves the suite out.
        "config": runner_protocols.stored_canonical(job.config.canonical),
        "models": {"target": model(job.config.target), "draft": model(job.config.draft)},
        "with_baseline": measures_own_baseline(job.config),
        # The kind's GPUs, which the host's engine must see to run it (runner.jobs).
        "gpus": job.hardware.gpu_list(),
    }


def measures_own_baseline(config: Config) -> bool:
    """Whether a stored config's job runs its paired baseline in the same runner invocation
    (the runner's rule, `runner.protocols.measures_own_baseline`)."""
    return runner_protocols.measures_own_baseline(
        speculative=config.baseline_id is not None, synthetic=config.synthetic
    )


def _delivered_payload(job: Job) -> dict:
    """The job's message with a fresh delivery nonce, which becomes the job's current one (its
    sequence starts again): an earlier delivery's messages count for nothing from now on."""
    delivery = signing.new_delivery()
    Job.objects.filter(pk=job.pk).update(delivery=delivery, delivery_sequence=0)
    job.delivery, job.delivery_sequence = delivery, 0
    return job_payload(job) | {"delivery": delivery}


def new_job(**fields) -> Job:
    """A job row with its first delivery nonce (`enqueue_on_commit` sends that delivery)."""
    return Job.objects.create(delivery=signing.new_delivery(), **fields)


def enqueue_on_commit(job: Job) -> None:
    """Send a new job's benchmark message (its first delivery, given by `new_job`) to its
    hardware's queue once the job is committed."""
    dispatch.send_benchmark_on_commit(
        payload=job_payload(job) | {"delivery": job.delivery},
        queue=job.hardware.queue_name,
        task_id=str(job.task_id),
    )


def claim_job(*, job_id: int) -> bool:
    """Move a queued job to running; False if another worker claimed it or it was cancelled."""
    return (
        Job.objects.filter(id=job_id, status=Job.Status.QUEUED).update(
            status=Job.Status.RUNNING,
            started_at=timezone.now(),
            attempts=F("attempts") + 1,
            progress={"phase": "started"},
        )
        == 1
    )


def record_progress(*, job_id: int, progress: dict) -> bool:
    """Store a worker's progress event, its well-typed figures only (a host we do not own may
    send anything: leaderboard.messaging.progress); the first ("started") claims the job."""
    clean = clean_progress(progress)
    if clean.get("phase") == "started":
        if claim_job(job_id=job_id):
            return True
        # A redelivered job (its worker was lost) starts again: count the attempt.
        if Job.objects.filter(id=job_id, status=Job.Status.RUNNING).update(
            attempts=F("attempts") + 1
        ):
            attempts = Job.objects.filter(id=job_id).values_list("attempts", flat=True).first() or 0
            if attempts > settings.SPECBOARD_MAX_ATTEMPTS:
                record_failure(job_id=job_id, error=f"gave up after {attempts - 1} lost workers")
                return False
            return True
        return False
    # The running engine's recent log, shown live on the job page (kept if a failure follows).
    text = live_log(progress)
    log = {"log_tail": text} if text is not None else {}
    # Progress may arrive after the result (the db queue has several consumers): guard on status.
    return bool(
        Job.objects.filter(id=job_id, status__in=Job.ACTIVE).update(
            status=Job.Status.RUNNING,
            progress=clean,
            started_at=Coalesce(F("started_at"), Value(timezone.now())),
            **log,
        )
    )


def record_failure(*, job_id: int, error: object, log_tail: object = "") -> bool:
    """Finish a job as failed with the reason and the engine's log tail; ignored once finished.

    Both come from a GPU host's message: they are stored as bounded text, NUL removed."""
    return bool(
        Job.objects.filter(id=job_id, status__in=Job.ACTIVE).update(
            status=Job.Status.FAILED,
            error=storable_text(error).strip()[:2000] or "failed",
            log_tail=storable_text(log_tail)[-8000:],
            finished_at=timezone.now(),
        )
    )


def cancel_job(*, job: Job, user: User) -> bool:
    """Cancel a queued or running job for its owner; False if it has already finished."""
    if job.owner_id != user.pk and not user.is_staff:
        raise PermissionDenied("only the job's owner can cancel it")
    cancelled = Job.objects.filter(id=job.pk, status__in=Job.ACTIVE).update(
        status=Job.Status.CANCELLED, finished_at=timezone.now()
    )
    if cancelled:
        # Workers skip a revoked task, and a running one sees it through should_cancel.
        dispatch.revoke_on_commit(str(job.task_id))
    return bool(cancelled)


def _send_job(job: Job) -> None:
    """Send a job's message again under its own task id, as a new delivery: whatever the lost
    one's worker may still send is refused, and the guarded claim makes repeats safe."""
    dispatch.send_benchmark(
        payload=_delivered_payload(job), queue=job.hardware.queue_name, task_id=str(job.task_id)
    )


def requeue_lost_jobs(
    *,
    held_task_ids: set[str],
    older_than_s: float,
    reporting_job_ids: Collection[int] = (),
) -> list[int]:
    """Re-send queued jobs that the broker no longer holds (lost in a restart, or never sent).

    A job a host already reported on (its report still on its way, `reporting_job_ids`) was
    taken by a worker, not lost: sending it again would make that worker's run count for
    nothing (a new delivery)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    waiting = Job.objects.filter(status=Job.Status.QUEUED, created_at__lt=cutoff)
    lost_ids = [
        job_id
        for job_id, task_id in waiting.values_list("id", "task_id")
        if str(task_id) not in held_task_ids and job_id not in reporting_job_ids
    ]
    lost = Job.objects.filter(id__in=lost_ids, status=Job.Status.QUEUED).select_related(
        "config__target", "config__draft", "hardware"
    )
    for job in lost:
        logger.warning("job %s is queued but the broker lost it: sending it again", job.pk)
        _send_job(job)
    return [job.pk for job in lost]


def requeue_orphaned_jobs(
    *,
    executing_task_ids: set[str],
    waiting_task_ids: set[str],
    finishing_job_ids: set[int],
    older_than_s: float,
) -> list[str]:
    """Put running jobs whose worker died back in the queue, or fail them after too many tries.

    A running job is orphaned when no live worker executes it, its message waits nowhere and no
    result or failure for it is on its way. Returns the task ids it dealt with, whose old
    (unacked) messages the broker should now forget.
    """
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    running = Job.objects.filter(status=Job.Status.RUNNING, started_at__lt=cutoff)
    orphan_ids = [
        job_id
        for job_id, task_id in running.values_list("id", "task_id")
        if str(task_id) not in executing_task_ids | waiting_task_ids
        and job_id not in finishing_job_ids
    ]
    orphans = Job.objects.filter(id__in=orphan_ids).select_related(
        "config__target", "config__draft", "hardware"
    )
    handled = []
    for job in orphans:
        if job.attempts >= settings.SPECBOARD_MAX_ATTEMPTS:
            if record_failure(
                job_id=job.pk,
                error=f"worker lost: gave up after {job.attempts} attempts whose worker died",
            ):
                handled.append(str(job.task_id))
        elif Job.objects.filter(id=job.pk, status=Job.Status.RUNNING).update(
            status=Job.Status.QUEUED, progress={"phase": "requeued"}, host=None
        ):
            logger.warning("job %s lost its worker mid-run: queueing it again", job.pk)
            _send_job(job)
            handled.append(str(job.task_id))
    return handled


def fail_stuck_jobs(*, max_seconds: int) -> list[int]:
    """Fail jobs still running past the time limit, and stop their benchmark if it still runs."""
    cutoff = timezone.now() - timedelta(seconds=max_seconds)
    stuck = list(
        Job.objects.filter(status=Job.Status.RUNNING, started_at__lt=cutoff).values_list(
            "id", "task_id"
        )
    )
    failed = []
    for job_id, task_id in stuck:
        if record_failure(
            job_id=job_id,
            error=f"timed out: still running {max_seconds} s after it started "
            "(its worker stopped or hung); stopped by the sweeper",
        ):
            dispatch.revoke(str(task_id))
            failed.append(job_id)
    return failed
