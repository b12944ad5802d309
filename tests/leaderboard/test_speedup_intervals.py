"""The speedup interval, decided by the verdicts when a run is recorded
(`verdicts.statistics.ratio_interval` for one batch against its baseline batch, the batch
speedups' spread for several) and stored on the row (speedup_ci95_low/high, speedup_basis),
which the front page's chart draws as stored."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as scipy_stats

from leaderboard import selectors, verdicts
from leaderboard.models import LeaderboardEntry
from leaderboard.services.board import mark_test_weights
from leaderboard.verdicts.statistics import Sample, ratio_interval, t_critical
from tests.support.measured_configs import measure


@pytest.fixture
def real_weights(models):
    """The tiny models cleared of their test-weights mark, as an admin could: only rows of
    real weights compete, and these tests are about what competes."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


@pytest.fixture
def board(user, real_weights, hardware, enqueued, make_result) -> dict:
    """Three measured draft-simple configs against one paired baseline of [50, 52] tok/s."""
    jobs = {
        n_max: measure(user, hardware, make_result, n_max, decode)
        for n_max, decode in ((4, [100.0, 104.0]), (3, [99.0, 103.0]), (2, [60.0, 60.5]))
    }
    return {"jobs": jobs, "hardware": hardware}


def test_the_speedup_interval_is_the_delta_method_on_the_log_ratio_with_welch_df():
    mean, stdev, n, base_mean, base_stdev, base_n = 102.0, 2.83, 2, 51.0, 1.41, 2
    own, base = (stdev / mean) ** 2 / n, (base_stdev / base_mean) ** 2 / base_n
    df = (own + base) ** 2 / (own**2 / (n - 1) + base**2 / (base_n - 1))
    half = scipy_stats.t.ppf(0.975, df) * math.sqrt(own + base)
    low, high = ratio_interval(Sample(mean, stdev, n), Sample(base_mean, base_stdev, base_n))
    assert low == pytest.approx(2.0 * math.exp(-half)) and high == pytest.approx(
        2.0 * math.exp(half)
    )
    assert low < 2.0 < high and low > 0
    # A fractional df is scipy's own t, between its whole neighbours (no table, no jump).
    assert t_critical(2) < t_critical(1.9) < t_critical(1)
    assert t_critical(1.99) == pytest.approx(t_critical(2), rel=0.01)


def test_a_speedup_has_no_interval_with_fewer_than_two_requests_or_a_missing_figure():
    baseline = Sample(50.0, 1.0, 5)
    assert ratio_interval(Sample(100.0, None, 1), baseline) is None
    assert ratio_interval(Sample(100.0, 1.0, 5), Sample(50.0, None, 5)) is None
    assert ratio_interval(None, baseline) is None
    assert ratio_interval(Sample(100.0, 0.0, 3), Sample(50.0, 0.0, 3)) == (2.0, 2.0)


def test_a_row_interval_is_taken_against_the_baseline_batch_it_is_paired_with(board):
    entry = LeaderboardEntry.objects.get(config=board["jobs"][4].config)
    low, high = entry.speedup_ci95_low, entry.speedup_ci95_high
    assert verdicts.speedup_interval(entry) == (low, high)
    assert entry.speedup_basis == "requests"  # one batch: its requests against its baseline's
    # The same spread a request further off: about as wide (no jump in t at a whole df).
    near = LeaderboardEntry.objects.get(config=board["jobs"][3].config)
    assert near.speedup_ci95_high / near.speedup_ci95_low == pytest.approx(high / low, rel=0.02)
    assert entry.speedup == pytest.approx(102.0 / 51.0)
    assert low < entry.speedup < high
    # From the batches themselves: [100, 104] over the baseline's [50, 52], two requests each
    # (Welch df 2.0, t = 4.303).
    own = (statistics.stdev([100.0, 104.0]) / 102.0) ** 2 / 2
    base = (statistics.stdev([50.0, 52.0]) / 51.0) ** 2 / 2
    half = 4.302652729911275 * math.sqrt(own + base)
    assert (low, high) == pytest.approx((2.0 * math.exp(-half), 2.0 * math.exp(half)))


def test_a_row_measured_in_several_batches_carries_the_interval_of_its_batch_speedups(
    board, user, make_result
):
    # n_max 4 again, a little faster: two batches, each with its own baseline batch.
    again = measure(user, board["hardware"], make_result, 4, [110.0, 114.0])
    entry = LeaderboardEntry.objects.get(config=again.config)
    speedups = [102.0 / 51.0, 112.0 / 51.0]
    logs = [math.log(value) for value in speedups]
    half = scipy_stats.t.ppf(0.975, 1) * statistics.stdev(logs) / math.sqrt(2)
    center = math.exp(statistics.fmean(logs))

    assert entry.speedup_basis == "batch speedups"
    assert (entry.speedup_ci95_low, entry.speedup_ci95_high) == pytest.approx(
        (center * math.exp(-half), center * math.exp(half))
    )
    # The chart draws the interval the row stores.
    [point] = [p for p in selectors.speedup_chart()["points"] if p["key"] == again.config.key]
    assert (point["ci95_low"], point["ci95_high"]) == (
        entry.speedup_ci95_low,
        entry.speedup_ci95_high,
    )
    assert point["interval_basis"] == "batch speedups"
