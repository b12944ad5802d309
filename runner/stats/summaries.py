"""A sample summarised: n, mean, median, stdev, min, max and the Student-t 95% interval of its
mean (``summarize``, with ``t_critical_95``), and the ratio of two figures either of which may be
missing (``ratio``)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

# Two-sided 95% critical values of Student's t by degrees of freedom.
_T95 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
    16: 2.120,
    17: 2.110,
    18: 2.101,
    19: 2.093,
    20: 2.086,
    21: 2.080,
    22: 2.074,
    23: 2.069,
    24: 2.064,
    25: 2.060,
    26: 2.056,
    27: 2.052,
    28: 2.048,
    29: 2.045,
    30: 2.042,
    40: 2.021,
    60: 2.000,
    120: 1.980,
}


def t_critical_95(degrees_of_freedom: int) -> float:
    """The two-sided 95% t value; linear in 1/df between tabulated points, 1.96 at infinity."""
    if degrees_of_freedom < 1:
        raise ValueError("degrees of freedom must be at least 1")
    if degrees_of_freedom in _T95:
        return _T95[degrees_of_freedom]
    known = sorted(_T95)
    upper = next((df for df in known if df > degrees_of_freedom), None)
    lower = max(df for df in known if df < degrees_of_freedom)
    upper_value = _T95[upper] if upper else 1.960
    upper_inverse = 1.0 / upper if upper else 0.0
    weight = (1.0 / lower - 1.0 / degrees_of_freedom) / (1.0 / lower - upper_inverse)
    return _T95[lower] + weight * (upper_value - _T95[lower])


def summarize(values: Sequence[float]) -> dict[str, float | int | None]:
    """n, mean, median, stdev, min, max and the 95% confidence interval of the mean.

    Every figure is None for no values. One value has a mean but no spread: its stdev and
    interval are None, not 0.0 and [mean, mean], which would claim a certainty it lacks (files
    written before this carry that zero-width form; ``runner.evidence`` accepts both)."""
    data = [float(v) for v in values]
    n = len(data)
    if n == 0:
        return {
            "n": 0,
            "mean": None,
            "median": None,
            "stdev": None,
            "min": None,
            "max": None,
            "ci95_low": None,
            "ci95_high": None,
        }
    mean = statistics.fmean(data)
    stdev = half_width = None
    if n > 1:
        stdev = statistics.stdev(data)
        half_width = t_critical_95(n - 1) * stdev / math.sqrt(n)
    return {
        "n": n,
        "mean": mean,
        "median": statistics.median(data),
        "stdev": stdev,
        "min": min(data),
        "max": max(data),
        "ci95_low": None if half_width is None else mean - half_width,
        "ci95_high": None if half_width is None else mean + half_width,
    }


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, or None where either is missing or the denominator is 0."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator
