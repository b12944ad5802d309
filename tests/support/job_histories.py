"""Made-up job histories for the queue and hosts tests: one queued baseline job submitted the
ordinary way, and jobs of its config with chosen statuses, timestamps, progress and hosts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.utils import timezone

from leaderboard import services
from leaderboard.models import GpuHost, Job

BASELINE = {
    "target_model": "tiny-qwen3.gguf",
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


def submit_first_job(user, hardware) -> Job:
    """One queued baseline job submitted the ordinary way: its config row serves the others."""
    return services.submit_config(owner=user, data=BASELINE, hardware_slug=hardware.slug)


def job_history(first_job: Job) -> Callable[..., Job]:
    """A maker of jobs of the first job's config, created minutes after a base two hours ago."""
    base = timezone.now() - timedelta(hours=2)

    def make(status: str, *, minute: int, started: float | None = None, took: float | None = None,
             hardware=None, progress: dict | None = None, host: GpuHost | None = None,
             seen: timedelta | None = None) -> Job:  # fmt: skip
        created = base + timedelta(minutes=minute)
        started_at = created + timedelta(seconds=started) if started is not None else None
        finished_at = (
            started_at + timedelta(seconds=took) if started_at and took is not None else None
        )
        return Job.objects.create(
            owner=first_job.owner,
            config=first_job.config,
            hardware=hardware or first_job.hardware,
            engine_release="b11434",
            status=status,
            created_at=created,
            started_at=started_at,
            finished_at=finished_at,
            progress=progress or {},
            host=host,
            host_seen_at=timezone.now() - seen if seen is not None else None,
        )

    return make


def register_host(hardware) -> GpuHost:
    """A GPU host named lab-a serving the hardware."""
    host, _key = services.register_gpu_host(name="lab-a", hardware_slug=hardware.slug)
    return host
