"""The verdicts' statistics: finite stored numbers, Student-t intervals, Welch's test and the
interval of a ratio, against figures worked by hand."""

from __future__ import annotations

import math

import pytest
from scipy import stats as scipy_stats

from leaderboard.verdicts.statistics import (
    Sample,
    finite,
    indistinguishable,
    ratio_interval,
    ratios_indistinguishable,
    sample_of,
    summary_sample,
    t_critical,
    t_interval,
    welch_p,
)


@pytest.mark.parametrize(
    "stored", [None, True, "12.5", float("nan"), float("inf"), -float("inf"), [1.0], {"mean": 1}]
)
def test_anything_but_a_finite_number_reads_as_no_number(stored):
    assert finite(stored) is None


def test_a_finite_number_reads_as_a_float():
    assert finite(3) == 3.0 and finite(-2.5) == -2.5


def test_the_t_interval_of_four_values_uses_three_degrees_of_freedom():
    sample = sample_of([1.0, 2.0, 3.0, 4.0])
    low, high = t_interval(sample)
    # mean 2.5, s = 1.2910, t(0.975, 3) = 3.1824: half-width 2.0543.
    assert sample.mean == 2.5 and sample.stdev == pytest.approx(1.29099, rel=1e-4)
    assert (low, high) == pytest.approx((2.5 - 2.05427, 2.5 + 2.05427), rel=1e-4)


def test_one_value_has_no_spread_and_no_interval():
    one = sample_of([7.0, float("nan")])
    assert one == Sample(mean=7.0, stdev=None, n=1) and t_interval(one) is None
    assert summary_sample(7.0, 0.0, 1).stdev is None


def test_welch_tells_clearly_separated_samples_apart_and_not_overlapping_ones():
    apart = Sample(mean=100.0, stdev=1.0, n=5), Sample(mean=90.0, stdev=1.0, n=5)
    close = Sample(mean=100.0, stdev=10.0, n=3), Sample(mean=98.0, stdev=10.0, n=3)
    assert welch_p(*apart) < 0.001 and indistinguishable(*apart) is False
    assert welch_p(*close) > 0.5 and indistinguishable(*close) is True


def test_welch_cannot_be_asked_of_a_side_without_spread():
    assert indistinguishable(Sample(100.0, None, 1), Sample(50.0, 1.0, 5)) is None
    assert indistinguishable(None, Sample(50.0, 1.0, 5)) is None


def test_two_overlapping_intervals_can_still_differ_by_welch():
    # Overlap is a conservative test: these two 95% intervals share values, Welch separates them.
    first, second = Sample(10.0, 1.0, 10), Sample(11.2, 1.0, 10)
    assert t_interval(first)[1] > t_interval(second)[0]
    assert indistinguishable(first, second) is False


def test_the_ratio_interval_is_the_delta_method_on_the_log_with_welch_df():
    low, high = ratio_interval(Sample(200.0, 10.0, 5), Sample(100.0, 5.0, 5))
    # Both relative errors 0.05/sqrt(5); Welch df = 8; t(0.975, 8) = 2.3060.
    half = 2.306004 * math.sqrt(2 * 0.05**2 / 5)
    assert (low, high) == pytest.approx((2 * math.exp(-half), 2 * math.exp(half)), rel=1e-5)
    assert ratio_interval(Sample(200.0, None, 1), Sample(100.0, 5.0, 5)) is None


def test_a_064x_speedup_is_never_indistinguishable_from_a_129x_one_with_intervals():
    assert ratios_indistinguishable(0.64, (0.60, 0.68), 1.29, (1.20, 1.38)) is False
    assert ratios_indistinguishable(1.25, (1.0, 1.5), 1.29, (1.1, 1.5)) is True
    assert ratios_indistinguishable(0.64, None, 1.29, (1.20, 1.38)) is None


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
