"""Measured draft-simple configs for page tests: submitted, then given results through the services."""

from __future__ import annotations

from leaderboard import services
from leaderboard.models import Job
from tests.support.baselines import with_baseline_section


def draft_simple(n_max: int, *, runs: int = 3) -> dict:
    return {
        "target_model": "tiny-qwen3.gguf",
        "draft_model": "tiny-qwen3.gguf",
        "spec_types": ["draft-simple"],
        "n_max": n_max,
        "protocol": {"name": "quick", "n_predict": 64, "runs": runs},
    }


def measure(
    owner, hardware, make_result, n_max: int, decode: list[float], *, runs: int = 3, **options
) -> Job:
    """Submit a config, then store its result with the paired baseline measured in the same run
    (a speculative job with its own drafting measures it beside itself: no baseline job). The
    protocol plans `runs` requests: a result may not hold more (the door counts them)."""
    job = services.submit_config(
        owner=owner, data=draft_simple(n_max, runs=runs), hardware_slug=hardware.slug
    )
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, decode, draft=(40, 30), tau=2.2, **options),
            make_result(job.config.baseline.key, [50.0, 52.0], **options),
        ),
    )
    job.refresh_from_db()
    return job
