"""The compare rules (selectors.compare): configs of different workloads are shown side by
side but never set against each other; a difference's interval is Welch's with its exact df."""

from __future__ import annotations

import pytest

from leaderboard import selectors, services
from leaderboard.models import Job
from leaderboard.selectors.compare import welch_difference
from tests.support.baselines import with_baseline_section
from tests.support.measured_configs import draft_simple, measure


def test_a_config_of_another_workload_is_shown_but_not_compared(
    user, hardware, models, make_result, enqueued
):
    quick = measure(user, hardware, make_result, 4, [100.0, 101.0, 99.0])
    other_prompt = draft_simple(3) | {
        "protocol": {"name": "quick", "n_predict": 64, "runs": 3, "prompt": "a a a a a a a a"}
    }
    job: Job = services.submit_config(owner=user, data=other_prompt, hardware_slug=hardware.slug)
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, [300.0, 301.0, 299.0], draft=(40, 30), tau=2.2),
            make_result(job.config.baseline.key, [50.0, 52.0]),
        ),
    )

    result = selectors.compare_configs(keys=[quick.config.key, job.config.key])

    [difference] = [d for d in result["differences"] if d["config_key"] == job.config.key]
    assert difference["difference"] is None and difference["ci95_low"] is None
    assert "measured different workloads" in difference["note"]


def test_the_welch_interval_uses_its_degrees_of_freedom_unrounded():
    found = welch_difference(mean_a=10.0, stdev_a=1.0, n_a=3, mean_b=8.0, stdev_b=2.0, n_b=4)
    # df = 4.571 (Welch–Satterthwaite): t(0.975, 4.571) = 2.6448, not t(4) = 2.776.
    assert found["df"] == pytest.approx(4.5714, rel=1e-3)
    half = (found["high"] - found["low"]) / 2
    assert half == pytest.approx(2.6448 * (1 / 3 + 4 / 4) ** 0.5, rel=1e-3)
