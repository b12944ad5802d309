"""The boards the page tests share: measured jobs and configs and the stored H200 files; each
fixture says what it stores. The site's own fixtures (models, ranked_models, hardware, user, a
host and job histories for the queue, the concurrency and categories results, ...) come from
tests/leaderboard."""

from __future__ import annotations

import pytest

from leaderboard import services
from leaderboard.models import Job, Run
from tests.support.baselines import with_baseline_section
from tests.support.h200_results import load_h200_results
from tests.support.measured_configs import draft_simple, measure


@pytest.fixture
def measured_job(user, models, hardware, enqueued, make_result) -> Job:
    """A speculative job (draft-simple, n_max 4, test weights: kept off the ranking), finished
    with the paired baseline measured in the same run."""
    job = services.submit_config(
        owner=user, data=draft_simple(4, runs=2), hardware_slug=hardware.slug
    )
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, [100.0, 104.0], draft=(40, 30), tau=2.2),
            make_result(job.config.baseline.key, [50.0, 52.0]),
        ),
    )
    job.refresh_from_db()
    return job


@pytest.fixture
def draft_simple_job(user, ranked_models, hardware, enqueued, make_result) -> Job:
    """One ranked draft-simple config (n_max 4) measured at [100, 104] tok/s."""
    return measure(user, hardware, make_result, 4, [100.0, 104.0])


@pytest.fixture
def two_close_configs(user, ranked_models, hardware, enqueued, make_result) -> tuple[Job, Job]:
    """Two ranked draft-simple configs a tok/s apart: n_max 4 leads n_max 3."""
    leader = measure(user, hardware, make_result, 4, [100.0, 104.0])
    runner_up = measure(user, hardware, make_result, 3, [99.0, 103.0])
    return leader, runner_up


@pytest.fixture
def three_configs(user, ranked_models, hardware, enqueued, make_result) -> dict:
    """Three measured draft-simple configs against one paired baseline of [50, 52] tok/s."""
    jobs = {
        n_max: measure(user, hardware, make_result, n_max, decode)
        for n_max, decode in ((4, [100.0, 104.0]), (3, [99.0, 103.0]), (2, [60.0, 60.5]))
    }
    return {"jobs": jobs, "hardware": hardware}


@pytest.fixture
def h200(user, hardware) -> list[Run]:
    """The stored H200 result files (random-weight models: synthetic and degenerate)."""
    return load_h200_results(owner=user, hardware=hardware)
