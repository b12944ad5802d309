"""Jobs as their owners see them: one job's status, what it costs and how long it has left.

It owns the reads of the job pages and the jobs API: a user's jobs and one job by id, the
status a job page polls (`job_status`: phase, progress as a fraction, error and log tail), its
cost known before it runs (`job_token_budget`, from the runner's own budget for the config) and
after it succeeded (`job_engine_seconds`, GPU seconds), and a linear estimate of the time left
(`job_remaining_seconds`); the job page's and the jobs API's whole reading of a job is
`job_report` (its status, while queued its standing in the queue, while running its time left).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from leaderboard.messaging.progress import clean_progress
from leaderboard.models import Job, Run
from leaderboard.selectors.jobs.queue import queue_standing
from leaderboard.stored_results import StoredResult
from runner.config import parse_stored_config
from runner.errors import ConfigError
from runner.protocols import job_token_budget as runner_job_budget


def user_jobs(*, user: User) -> QuerySet[Job]:
    return (
        Job.objects.filter(owner=user)
        .select_related("config", "hardware", "run")
        .order_by("-created_at")
    )


def job_by_id(*, job_id: int) -> Job | None:
    return (
        Job.objects.select_related("config", "hardware", "owner", "run").filter(id=job_id).first()
    )


def job_status(*, job: Job) -> dict:
    """What the job page and its JSON show: status, progress as a fraction, error and log tail.

    The stored event is read through the same cleaning as it was stored with, so a row written
    before that cleaning existed shows its well-typed figures and nothing else."""
    progress = clean_progress(job.progress)
    done, total = progress.get("done", 0), progress.get("total", 0)
    run = _succeeded_run(job)
    return {
        "id": job.pk,
        "status": job.status,
        "active": job.is_active,
        "phase": progress.get("phase", ""),
        "done": done,
        "total": total,
        "tokens": progress.get("tokens", 0),
        "elapsed_s": progress.get("elapsed_s"),
        # While the GPU host fetches a Hugging Face model: "downloading 3.1 of 16.9 GB".
        "downloaded_bytes": progress.get("downloaded_bytes"),
        "total_bytes": progress.get("total_bytes"),
        "download": download_text(progress),
        # A stored result means every request was measured, whatever the last progress event said.
        "percent": 100 if run else (min(round(100 * done / total), 100) if total else 0),
        "error": job.error,
        "log_tail": job.log_tail,
        "config_key": job.config.key,
        "run_id": run.pk if run else None,
        **job_cost(job=job),
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


def job_report(*, job: Job) -> dict:
    """What the job page and the jobs API show of a job: its status (`job_status`) with its queue
    standing (`queue_standing`: position and estimated start while it is queued) and the time it
    has left while it runs (`remaining_s`, `job_remaining_seconds`)."""
    status = job_status(job=job)
    return status | queue_standing(job=job) | {"remaining_s": job_remaining_seconds(status=status)}


def download_text(progress: dict) -> str:
    """What a model download's (cleaned) progress reads as, or "" when none is under way."""
    done, total = progress.get("downloaded_bytes"), progress.get("total_bytes")
    if progress.get("phase") != "downloading" or done is None or not total:
        return ""
    done = min(done, total)
    return f"downloading {done / 1e9:.1f} of {total / 1e9:.1f} GB"


def _succeeded_run(job: Job) -> Run | None:
    return getattr(job, "run", None) if job.status == Job.Status.SUCCEEDED else None


def job_token_budget(*, job: Job) -> dict[str, int] | None:
    """The runner's token budget for a job's config; None for configs it did not write."""
    try:
        return runner_job_budget(parse_stored_config(job.config.canonical))
    except ConfigError:
        return None


def job_cost(*, job: Job) -> dict:
    """What a job will cost, known before it runs (requests and tokens, warm-ups included), and
    once it succeeded what it took: seconds the GPU (or, on CPU builds, the engine) was held."""
    run = _succeeded_run(job)
    return {
        "token_budget": job_token_budget(job=job),
        # None, not 0.0, where no GPU was held: a CPU host's cost is its engine's seconds.
        "gpu_seconds": run.gpu_seconds if run and held_a_gpu(run=run) else None,
        "engine_seconds": job_engine_seconds(run=run),
    }


def held_a_gpu(*, run: Run) -> bool:
    """Whether a run's engine held a GPU: a CUDA build (the runner counts GPU seconds only for
    one), else GPU seconds or GPU memory reported; a CPU build's seconds are the CPU's."""
    if run.engine_backend == "cpu":
        return False
    return run.engine_backend == "cuda" or bool(run.gpu_seconds) or run.memory_kind == "gpu"


def job_remaining_seconds(*, status: dict) -> float | None:
    """A linear estimate of the time left: elapsed per request done, times requests to go."""
    done, total, elapsed = (
        status.get("done") or 0,
        status.get("total") or 0,
        status.get("elapsed_s"),
    )
    if not status.get("active") or not done or not total or elapsed is None or done >= total:
        return None
    return elapsed / done * (total - done)


def job_engine_seconds(*, run: Run | None) -> float | None:
    """Seconds llama-server was held for a run (GPU or not), as the runner reported them."""
    if run is None:
        return None
    stored = StoredResult.of(run.raw_result)
    seconds = stored.engine_seconds
    baseline = stored.baseline.engine_seconds if stored.baseline else None
    if seconds is not None and baseline is not None:
        seconds += baseline
    return seconds
