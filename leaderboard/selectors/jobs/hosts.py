"""Who serves each hardware kind: its GPU hosts, online or not, what they run, and its queue.

It owns the reads of the /hosts/ page and `GET /api/v1/hosts`: for every hardware kind that is
served (or has registered hosts) its queue depth (queued jobs in the database, and the messages
waiting in the broker where that is cheap: Redis), its running jobs, the live workers that
consume its queue, and each registered host with its status, its running job and the engine
release it serves (that of the latest run it measured, else of the latest job it claimed).

A host's status, in this order: "revoked" (its key no longer counts); "online" when it sent a
signed message within `online_window_s()` (the reclaim window: a host quiet for longer may lose
its job to another) or a live worker named for it (`gpu@<host name>`) consumes its queue;
"unknown" when the broker could not be asked, or when workers that name no registered host
consume its queue (one of them may be this host; a worker named for another registered host of
the kind is that host); otherwise "offline". Nothing here reads or
returns a host's key.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TypedDict

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, OuterRef, Q, Subquery
from django.utils import timezone
from django.utils.text import slugify

from leaderboard.messaging import broker
from leaderboard.messaging.progress import clean_progress
from leaderboard.models import GpuHost, Hardware, Job, Run
from leaderboard.selectors.jobs.queue import progress_fraction

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class _HostAnnotations(TypedDict):
    """What `_hosts` annotates each host with."""

    last_message_at: datetime | None
    run_release: str | None
    job_release: str | None


# Asking the workers waits for their replies (a second): one answer serves the page this long.
WORKERS_CACHE_SECONDS = 15
_WORKERS_CACHE_KEY = "hosts:live-workers"


def online_window_s() -> int:
    """Seconds since its last signed message within which a host counts as online."""
    return settings.SPECBOARD_HOST_RECLAIM_SECONDS


def cached_live_workers() -> dict[str, list[str]] | None:
    """The broker's live workers and their queues (None: unknown), asked at most once per
    WORKERS_CACHE_SECONDS."""
    held = cache.get(_WORKERS_CACHE_KEY)
    if held is None:
        held = {"workers": broker.live_workers()}
        cache.set(_WORKERS_CACHE_KEY, held, WORKERS_CACHE_SECONDS)
    return held["workers"]


def worker_host_name(worker: str) -> str:
    """The host a Celery worker's node name names: "gpu@lab-a.example" -> "lab-a"."""
    _, _, machine = worker.rpartition("@")
    return slugify(machine.split(".")[0])


def host_status(
    *,
    host: GpuHost,
    last_message_at: datetime | None,
    workers: dict[str, list[str]] | None,
    now: datetime,
    registered: frozenset[str] = frozenset(),
) -> tuple[str, str]:
    """A host's status and why, by the rule in the module's docstring; `registered` names the
    kind's other hosts, whose named workers cannot be this one."""
    if host.revoked:
        return "revoked", "its key was revoked: nothing it sends is accepted"
    window = online_window_s()
    if last_message_at is not None and last_message_at >= now - timedelta(seconds=window):
        return "online", f"sent a signed message {_ago(now - last_message_at)} ago"
    queue = host.hardware.queue_name
    serving = {name for name, queues in (workers or {}).items() if queue and queue in queues}
    if any(worker_host_name(name) == host.name for name in serving):
        return "online", "its worker answers on the broker"
    if workers is None:
        return "unknown", "the broker could not be asked which workers are alive"
    unnamed = [name for name in serving if worker_host_name(name) not in registered]
    if unnamed:
        return "unknown", (
            f"{len(unnamed)} worker(s) consuming {queue} answer without naming this host; "
            f"no signed message in the last {window // 60} minutes"
        )
    last = (
        f"its last signed message {_ago(now - last_message_at)} ago"
        if last_message_at
        else "it never sent a signed message"
    )
    return "offline", f"no worker of this kind answers; {last}"


def _ago(delta: timedelta) -> str:
    seconds = max(int(delta.total_seconds()), 0)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 2 * 3600:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"


def _running_jobs(hardware_ids: list[int]) -> list[Job]:
    return list(
        Job.objects.filter(hardware_id__in=hardware_ids, status=Job.Status.RUNNING)
        .select_related("config", "hardware")
        .order_by("started_at", "id")
    )


def _job_summary(job: Job) -> dict:
    progress = clean_progress(job.progress)
    fraction, _ = progress_fraction(progress)
    return {
        "id": job.pk,
        "config_key": job.config.key,
        "label": job.config.label,
        "phase": progress.get("phase", ""),
        "percent": round(100 * fraction) if fraction is not None else 0,
        "started_at": job.started_at,
    }


def _hosts() -> list[WithAnnotations[GpuHost, _HostAnnotations]]:
    latest_run = Run.objects.filter(job__host=OuterRef("pk")).order_by("-created_at", "-id")
    latest_job = Job.objects.filter(host=OuterRef("pk")).order_by("-created_at", "-id")
    return list(
        GpuHost.objects.select_related("hardware")
        .defer("key")
        .annotate(
            last_message_at=Max("jobs__host_seen_at"),
            run_release=Subquery(latest_run.values("engine_release")[:1]),
            job_release=Subquery(latest_job.values("engine_release")[:1]),
        )
        .order_by("name")
    )


def host_board(
    *, workers: dict[str, list[str]] | None, now: datetime | None = None, broker_counts: bool = True
) -> dict:
    """Every served hardware kind with its queue, running jobs, live workers and hosts."""
    now = now or timezone.now()
    hosts = _hosts()
    kinds = list(
        Hardware.objects.filter(~Q(queue_name="") | Q(hosts__isnull=False))
        .distinct()
        .order_by("gpu_name", "slug")
    )
    queued = dict(
        Job.objects.filter(status=Job.Status.QUEUED, hardware__in=kinds)
        .values_list("hardware_id")
        .annotate(count=Count("id"))
        .order_by()
    )
    running = _running_jobs([kind.pk for kind in kinds])
    queues = [kind.queue_name for kind in kinds if kind.queue_name]
    # The broker's count of each queue's waiting messages (none where it was not asked).
    waiting = (broker.queue_lengths(queues) if broker_counts and queues else None) or {}
    rows = []
    for kind in kinds:
        own = [host for host in hosts if host.hardware_id == kind.pk]
        row = _kind_row(kind, own, running=running, workers=workers, now=now)
        rows.append(
            row
            | {
                "queued_jobs": queued.get(kind.pk, 0),
                "broker_waiting": waiting.get(kind.queue_name),
            }
        )
    return {
        "checked_at": now,
        "workers_known": workers is not None,
        "online_window_s": online_window_s(),
        "hardware": rows,
    }


def _kind_row(
    kind: Hardware,
    hosts: list[WithAnnotations[GpuHost, _HostAnnotations]],
    *,
    running: list[Job],
    workers: dict[str, list[str]] | None,
    now: datetime,
) -> dict:
    """A served hardware kind's row: its queue, running jobs, live workers and hosts."""
    host_rows = _host_rows(hosts, running=running, workers=workers, now=now)
    kind_running = [job for job in running if job.hardware_id == kind.pk]
    claimed = {host.pk for host in hosts}
    return {
        "slug": kind.slug,
        "gpu_name": kind.gpu_name,
        # "2x RTX 3090 24GB" for a kind of several GPUs (the page's heading).
        "label": kind.label,
        "queue": kind.queue_name,
        "running_jobs": len(kind_running),
        # Running jobs no registered host holds (unsigned workers, or a lost claim).
        "unclaimed_running": [
            _job_summary(job) for job in kind_running if job.host_id not in claimed
        ],
        "workers_answering": _workers_serving(kind.queue_name, workers),
        "hosts": host_rows,
        "online_hosts": sum(1 for row in host_rows if row["status"] == "online"),
    }


def _workers_serving(queue: str, workers: dict[str, list[str]] | None) -> int | None:
    """How many live workers consume a kind's queue; None where the workers were not asked."""
    if workers is None:
        return None
    return sum(1 for queues in workers.values() if queue and queue in queues)


def _host_rows(
    hosts: list[WithAnnotations[GpuHost, _HostAnnotations]],
    *,
    running: list[Job],
    workers: dict[str, list[str]] | None,
    now: datetime,
) -> list[dict]:
    """One hardware kind's registered hosts: each one's status and why, its running job and
    the engine release it last reported (from its newest run, else its newest job)."""
    rows = []
    names = frozenset(host.name for host in hosts)
    for host in hosts:
        status, reason = host_status(
            host=host,
            last_message_at=host.last_message_at,
            workers=workers,
            now=now,
            registered=names,
        )
        job = next((j for j in running if j.host_id == host.pk), None)
        rows.append(
            {
                "name": host.name,
                "status": status,
                "reason": reason,
                "last_message_at": host.last_message_at,
                "running_job": _job_summary(job) if job else None,
                "engine_release": host.run_release or host.job_release or "",
                "engine_release_from": (
                    "run" if host.run_release else ("job" if host.job_release else "")
                ),
                "revoked": host.revoked,
                "registered_at": host.created_at,
            }
        )
    return rows
