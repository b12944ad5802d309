"""A row's uncertainty: a random-effects estimate over its batch means with several batches
(neither collapsing to a point when two means agree nor exploding at one degree of freedom),
else its one batch's requests; its speedup's, the interval of the speedup shown; and the
speedup interval a recorded row stores (speedup_ci95_low/high, speedup_basis), which the front
page's chart draws as stored."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as scipy_stats

from leaderboard import selectors, verdicts
from leaderboard.models import LeaderboardEntry
from leaderboard.verdicts.statistics import Sample
from leaderboard.verdicts.uncertainty import config_uncertainty, speedup_uncertainty
from tests.support.measured_configs import measure

# The seed's seven n-gram batch means (tok/s): batches differ (one-way ANOVA p = 0.005).
SEED_NGRAM_BATCHES = (660.7, 692.8, 769.6, 776.8, 783.1, 779.8, 781.2)


def test_with_several_batches_the_batch_means_are_the_samples():
    batches = [Sample(mean, 5.0, 10) for mean in SEED_NGRAM_BATCHES]
    found = config_uncertainty(batches, best=batches[4])
    assert found.basis == "batch means"
    low, high = found.interval
    # The batches differ far beyond their requests' spread: the estimate is about the plain
    # mean of the seven means (749.1), and far wider than one batch's own interval (about ±3.6).
    assert found.sample.mean == pytest.approx(statistics.fmean(SEED_NGRAM_BATCHES), rel=1e-3)
    assert high - low > 40 and low < 749.1 < high


def test_two_batches_with_equal_means_keep_their_requests_spread():
    # "50.0 - 50.0" was two batch means that happened to agree though each batch had spread.
    found = config_uncertainty([Sample(50.0, 5.0, 3), Sample(50.0, 5.0, 3)], best=None)
    low, high = found.interval
    # Both batches' six requests: a standard error of 5 / sqrt(6), t at 4 degrees of freedom.
    half = scipy_stats.t.ppf(0.975, 4) * 5.0 / math.sqrt(6)
    assert (low, high) == pytest.approx((50.0 - half, 50.0 + half))


def test_a_second_batch_does_not_explode_the_interval_at_one_degree_of_freedom():
    # The /best/ baseline: one batch gave 22.3 tok/s (18.3-26.2); a second, a little slower,
    # made the plain t over two means (t = 12.7) read 0.6-40.8.
    best = Sample(22.3, 3.96 / scipy_stats.t.ppf(0.975, 9) * math.sqrt(10), 10)
    other = Sample(19.0, 3.5, 10)
    found = config_uncertainty([best, other], best=best)
    low, high = found.interval
    assert 15.0 < low < 19.0 < 22.3 < high < 27.0
    assert found.sample.has_spread  # what Welch's test reads: the estimate, not two means


def test_two_batches_without_their_spread_give_no_interval_and_no_test():
    found = config_uncertainty([Sample(50.0, None, 1), Sample(40.0, None, 1)], best=None)
    assert found.interval is None and not found.sample.has_spread


def test_with_one_batch_its_requests_are_the_samples():
    best = Sample(100.0, 4.0, 10)
    found = config_uncertainty([best], best=best)
    assert found.basis == "requests" and found.n == 10
    assert found.interval == pytest.approx(
        (100 - 2.2622 * 4 / 10**0.5, 100 + 2.2622 * 4 / 10**0.5), rel=1e-4
    )
    assert config_uncertainty([], best=Sample(100.0, None, 1)).interval is None


def test_a_speedup_over_depths_has_no_interval():
    found = speedup_uncertainty(
        own=Sample(100.0, 1.0, 3), baseline=Sample(50.0, 1.0, 3), across_depths=True
    )
    assert found.interval is None and found.basis == ""
    plain = speedup_uncertainty(own=Sample(100.0, 1.0, 3), baseline=Sample(50.0, 1.0, 3))
    assert plain.basis == "requests" and plain.interval[0] < 2.0 < plain.interval[1]


# The interval a row stores --------------------------------------------------------------------


@pytest.fixture
def board(user, ranked_models, hardware, enqueued, make_result) -> dict:
    """Three measured draft-simple configs against one paired baseline of [50, 52] tok/s."""
    jobs = {
        n_max: measure(user, hardware, make_result, n_max, decode)
        for n_max, decode in ((4, [100.0, 104.0]), (3, [99.0, 103.0]), (2, [60.0, 60.5]))
    }
    return {"jobs": jobs, "hardware": hardware}


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


def test_a_row_measured_in_several_batches_carries_the_interval_of_the_speedup_it_shows(
    board, user, make_result
):
    # n_max 4 again, a little faster: two batches, each with its own baseline batch. The row
    # shows the best batch's speedup, 112 / 51; its interval is that ratio's, not the interval
    # of the two batches' geometric mean (which the figure need not even lie in).
    again = measure(user, board["hardware"], make_result, 4, [110.0, 114.0])
    entry = LeaderboardEntry.objects.get(config=again.config)
    own = (statistics.stdev([110.0, 114.0]) / 112.0) ** 2 / 2
    base = (statistics.stdev([50.0, 52.0]) / 51.0) ** 2 / 2
    welch_df = (own + base) ** 2 / (own**2 + base**2)
    half = scipy_stats.t.ppf(0.975, welch_df) * math.sqrt(own + base)

    assert entry.speedup == pytest.approx(112.0 / 51.0)
    assert entry.speedup_basis == "requests"
    assert (entry.speedup_ci95_low, entry.speedup_ci95_high) == pytest.approx(
        (112.0 / 51.0 * math.exp(-half), 112.0 / 51.0 * math.exp(half))
    )
    assert entry.speedup_ci95_low < entry.speedup < entry.speedup_ci95_high
    # The chart draws the interval the row stores.
    [point] = [p for p in selectors.speedup_chart()["points"] if p["key"] == again.config.key]
    assert (point["ci95_low"], point["ci95_high"]) == (
        entry.speedup_ci95_low,
        entry.speedup_ci95_high,
    )
    assert point["interval_basis"] == "requests"
