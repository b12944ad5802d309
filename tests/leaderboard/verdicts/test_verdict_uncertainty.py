"""A row's uncertainty: its batch means with several batches, else its one batch's requests;
its speedup's over per-batch speedups, else the two batches' ratio."""

from __future__ import annotations

import pytest

from leaderboard.verdicts.statistics import Sample
from leaderboard.verdicts.uncertainty import config_uncertainty, speedup_uncertainty

# The seed's seven n-gram batch means (tok/s): batches differ (one-way ANOVA p = 0.005).
SEED_NGRAM_BATCHES = (660.7, 692.8, 769.6, 776.8, 783.1, 779.8, 781.2)


def test_with_several_batches_the_batch_means_are_the_samples():
    batches = [Sample(mean, 5.0, 10) for mean in SEED_NGRAM_BATCHES]
    found = config_uncertainty(batches, best=batches[4])
    assert found.basis == "batch means" and found.n == 7
    low, high = found.interval
    # Far wider than the best batch's own interval over its ten requests (about ±3.6).
    assert high - low > 80 and low < 749.1 < high


def test_with_one_batch_its_requests_are_the_samples():
    best = Sample(100.0, 4.0, 10)
    found = config_uncertainty([best], best=best)
    assert found.basis == "requests" and found.n == 10
    assert found.interval == pytest.approx(
        (100 - 2.2622 * 4 / 10**0.5, 100 + 2.2622 * 4 / 10**0.5), rel=1e-4
    )
    assert config_uncertainty([], best=Sample(100.0, None, 1)).interval is None


def test_a_speedup_interval_over_per_batch_speedups_when_several_batches_measured_their_own():
    found = speedup_uncertainty(
        batch_speedups=[1.9, 2.0, 2.1], own=Sample(100.0, 1.0, 3), baseline=Sample(50.0, 1.0, 3)
    )
    assert found.basis == "batch speedups" and found.interval[0] < 2.0 < found.interval[1]


def test_a_speedup_over_depths_from_one_batch_has_no_interval():
    found = speedup_uncertainty(
        batch_speedups=[2.0],
        own=Sample(100.0, 1.0, 3),
        baseline=Sample(50.0, 1.0, 3),
        across_depths=True,
    )
    assert found.interval is None and found.basis == ""
    plain = speedup_uncertainty(
        batch_speedups=[2.0], own=Sample(100.0, 1.0, 3), baseline=Sample(50.0, 1.0, 3)
    )
    assert plain.basis == "requests" and plain.interval[0] < 2.0 < plain.interval[1]
