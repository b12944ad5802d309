"""Where a queued job stands: its place in its hardware's queue and when it should start.

It owns `queue_standing`: a queued job's position among the queued jobs of its hardware kind
(first in, first out by submission, as the broker's list delivers them: 1 is the next to start)
and an estimated start, from the measured durations of that hardware's recent jobs (the median
started-to-finished time of its last succeeded jobs). The estimate plays the queue out: each
running job frees its worker after its own time left (the linear estimate of its progress, else
the median less what it has run), each job ahead then holds the first free worker for the
median; with nothing running, one worker is assumed. Without any measured duration the start is
unknown (None). A job that is not queued has neither a position nor an estimate.

A job's place is counted for every request. Counting visits every queued job ahead of it (4 ms
of PostgreSQL's time at 10,000), so in a long queue (over LONG_QUEUE ahead) the site counts
a hardware kind's queue whole at most once per SPECBOARD_QUEUE_ESTIMATE_SECONDS (1 s), for the
job that asked, and a job submitted after that one from it: the jobs that were ahead of it then,
plus the queued jobs from it to this one, counted now. Such a place is the queue as it stood up
to that long ago: a job claimed or cancelled since is still counted ahead. What the estimate
rests on (the hardware's typical duration and its running jobs) is the same for every job of
that hardware, and is kept for the same time: a burst of submissions reads it once a second,
not twice a submission. Both are kept in Django's shared cache (Redis where several processes
serve), under the hardware kind, for that window: no process keeps a memory of its own.
"""

from __future__ import annotations

import heapq
import statistics
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db.models import Q, QuerySet
from django.utils import timezone

from leaderboard.messaging.progress import clean_progress
from leaderboard.models import Job

# How many of a hardware kind's latest succeeded jobs its typical duration is the median of.
RECENT_JOBS = 20
# A wait estimated past a year says nothing (a host's odd progress can make one): unknown.
LONGEST_ESTIMATE_S = 365 * 86400


def median_job_seconds(*, hardware_id: int, recent: int = RECENT_JOBS) -> float | None:
    """The median started-to-finished seconds of a hardware kind's latest succeeded jobs."""
    timestamps = (
        Job.objects.filter(
            hardware_id=hardware_id,
            status=Job.Status.SUCCEEDED,
            started_at__isnull=False,
            finished_at__isnull=False,
        )
        .order_by("-finished_at", "-id")
        .values_list("started_at", "finished_at")[:recent]
    )
    durations = [
        (finished - started).total_seconds()
        for started, finished in timestamps
        if started is not None and finished is not None and finished >= started
    ]
    return statistics.median(durations) if durations else None


# A queue with more jobs than this ahead is counted from a kept base (`jobs_ahead`).
LONG_QUEUE = 1000


def _kept(key: str, hardware_id: int) -> str:
    """The shared cache's key for what is kept of a hardware kind's queue."""
    return f"queue:{key}:{hardware_id}"


def _queued_from(queued: QuerySet, place: tuple[datetime, int]) -> QuerySet:
    """The jobs at this place in the queue or after it (submitted later, ties by id)."""
    submitted, pk = place
    return queued.filter(created_at__gte=submitted).filter(
        Q(created_at__gt=submitted) | Q(id__gte=pk)
    )


def _queued_before(queued: QuerySet, place: tuple[datetime, int]) -> QuerySet:
    """The jobs ahead of this place in the queue (submitted earlier, ties by id)."""
    submitted, pk = place
    return queued.filter(created_at__lte=submitted).filter(
        Q(created_at__lt=submitted) | Q(id__lt=pk)
    )


def jobs_ahead(*, job: Job) -> int:
    """Queued jobs of the same hardware kind submitted before this one (ties by id): counted
    whole, or in a long queue from this process's base for the kind (the module's docstring)."""
    place = (job.created_at, job.pk)
    queued = Job.objects.filter(hardware_id=job.hardware_id, status=Job.Status.QUEUED)
    window = settings.SPECBOARD_QUEUE_ESTIMATE_SECONDS
    # The base of the kind's long queue: the place (submitted, id) it was counted for, the jobs
    # ahead of that place then.
    base = cache.get(_kept("base", job.hardware_id)) if window > 0 else None
    if base is not None and base[0] <= place:
        counted_for, ahead_of_it = base
        return ahead_of_it + _queued_before(_queued_from(queued, counted_for), place).count()
    ahead = _queued_before(queued, place).count()
    if ahead > LONG_QUEUE and window > 0:
        cache.set(_kept("base", job.hardware_id), (place, ahead), timeout=window)
    return ahead


def progress_fraction(progress: object) -> tuple[float | None, float | None]:
    """A running job's share of requests done and the linear estimate of its seconds left, from
    its last progress event; None where the event does not say (a host's message is not
    trusted to hold numbers: only its well-typed figures count)."""
    progress = clean_progress(progress)
    done, total = progress.get("done"), progress.get("total")
    elapsed = progress.get("elapsed_s")
    if not total or done is None:
        return None, None
    fraction = min(done / total, 1.0)
    if not done or elapsed is None or done >= total:
        return fraction, None
    return fraction, elapsed / done * (total - done)


def running_jobs(*, hardware_id: int) -> list[tuple[datetime | None, object]]:
    """The start and last progress event of each job running on a hardware kind."""
    running = Job.objects.filter(hardware_id=hardware_id, status=Job.Status.RUNNING)
    return list(running.values_list("started_at", "progress"))


def running_remaining_seconds(
    *, running: list[tuple[datetime | None, object]], typical_s: float | None, now: datetime
) -> list[float | None]:
    """Each running job's time left (a hardware kind's `running_jobs`): its progress's linear
    estimate, else the typical duration less what it has run (never below zero); None where
    neither is known."""
    remaining: list[float | None] = []
    for started_at, progress in running:
        _, left = progress_fraction(progress)
        if left is None and typical_s is not None:
            ran = (now - started_at).total_seconds() if started_at else 0.0
            left = max(typical_s - ran, 0.0)
        remaining.append(left)
    return remaining


def estimated_wait_seconds(
    *, ahead: int, running_left: list[float | None], typical_s: float | None
) -> float | None:
    """Seconds until a job with `ahead` jobs before it starts, playing the queue out on the
    workers the running jobs hold (one worker when none runs); None when a time is unknown."""
    if typical_s is None or any(left is None for left in running_left):
        return None
    free_at = sorted(float(left) for left in running_left if left is not None) or [0.0]
    for _ in range(ahead):
        heapq.heappush(free_at, heapq.heappop(free_at) + typical_s)
    return free_at[0]


def estimate_inputs(
    *, hardware_id: int
) -> tuple[float | None, list[tuple[datetime | None, object]]]:
    """A hardware kind's typical job duration and running jobs, read at most once per
    SPECBOARD_QUEUE_ESTIMATE_SECONDS. Only the estimate rests on them, never the position."""
    window = settings.SPECBOARD_QUEUE_ESTIMATE_SECONDS
    kept = cache.get(_kept("inputs", hardware_id)) if window > 0 else None
    if kept is not None:
        return kept
    typical = median_job_seconds(hardware_id=hardware_id)
    running = running_jobs(hardware_id=hardware_id)
    if window > 0:
        cache.set(_kept("inputs", hardware_id), (typical, running), timeout=window)
    return typical, running


def queue_standing(*, job: Job, now: datetime | None = None) -> dict:
    """A job's place in its hardware's queue: position (1 is next), jobs ahead, the typical job
    duration it rests on, the estimated wait and start; all None unless the job is queued."""
    standing: dict = {
        "queue_position": None,
        "jobs_ahead": None,
        "typical_job_seconds": None,
        "estimated_wait_s": None,
        "estimated_start": None,
        "estimated_wait_text": "",
    }
    if job.status != Job.Status.QUEUED:
        return standing
    now = now or timezone.now()
    ahead = jobs_ahead(job=job)
    typical, running = estimate_inputs(hardware_id=job.hardware_id)
    wait = estimated_wait_seconds(
        ahead=ahead,
        running_left=running_remaining_seconds(running=running, typical_s=typical, now=now),
        typical_s=typical,
    )
    if wait is not None and wait > LONGEST_ESTIMATE_S:
        wait = None
    standing.update(
        queue_position=ahead + 1,
        jobs_ahead=ahead,
        typical_job_seconds=typical,
        estimated_wait_s=wait,
        estimated_wait_text=wait_text(wait),
        estimated_start=now + timedelta(seconds=wait) if wait is not None else None,
    )
    return standing


def wait_text(seconds: float | None) -> str:
    """An estimated wait as a person reads it: "under a minute", "about 12 min", "about 3.5 h"."""
    if seconds is None:
        return "unknown"
    if seconds < 60:
        return "under a minute"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"
