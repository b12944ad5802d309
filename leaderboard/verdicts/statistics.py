"""The statistics every verdict rests on, from scipy.stats: a stored number read as finite or
nothing, a sample's Student-t interval, Welch's test of two samples and the interval of a ratio.

A `Sample` is a summary (mean, standard deviation, size), because the board keeps summaries, not
every value: Welch's test and the t-interval need nothing more. Which values are the sample is
the caller's choice and is said beside the number (`basis`): the batch means when a config ran
several batches (batches differ: warm-up, n-gram state and clocks), the requests of its one
batch otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special as scipy_special
from scipy import stats as scipy_stats

CONFIDENCE = 0.95
# A difference is "clear" when Welch's test rejects equality at this level.
ALPHA = 1.0 - CONFIDENCE

Interval = tuple[float, float]


def finite(value: object) -> float | None:
    """A stored number as a float; None for a missing value, a bool, text, NaN or infinity.

    Every reader of stored figures goes through this one rule."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def count(value: object) -> int | None:
    """A stored count as an int (a finite whole number at least 0), else None."""
    number = finite(value)
    if number is None or number < 0 or number != int(number):
        return None
    return int(number)


@dataclass(frozen=True)
class Sample:
    """A sample's summary: its mean, standard deviation (None without spread) and size."""

    mean: float
    stdev: float | None
    n: int

    @property
    def has_spread(self) -> bool:
        return self.n >= 2 and self.stdev is not None


def sample_of(values: Iterable[float | None]) -> Sample | None:
    """The summary of the finite values given; None when there are none."""
    kept = [number for value in values if (number := finite(value)) is not None]
    if not kept:
        return None
    mean = math.fsum(kept) / len(kept)
    if len(kept) < 2:
        return Sample(mean=mean, stdev=None, n=1)
    variance = math.fsum((value - mean) ** 2 for value in kept) / (len(kept) - 1)
    return Sample(mean=mean, stdev=math.sqrt(variance), n=len(kept))


def summary_sample(mean: object, stdev: object, n: object) -> Sample | None:
    """A Sample from stored summary figures; None where the mean is not a finite number."""
    center = finite(mean)
    size = count(n)
    if center is None or not size:
        return None
    spread = finite(stdev)
    if size < 2 or spread is None or spread < 0:
        return Sample(mean=center, stdev=None, n=size)
    return Sample(mean=center, stdev=spread, n=size)


def t_critical(df: float) -> float:
    """The two-sided 95% critical value of Student's t with df degrees of freedom."""
    return float(scipy_stats.t.ppf(0.5 + CONFIDENCE / 2, df))


def t_interval(sample: Sample | None) -> Interval | None:
    """The 95% Student-t interval of the sample's mean; None without spread."""
    if sample is None or not sample.has_spread:
        return None
    assert sample.stdev is not None
    half = t_critical(sample.n - 1) * sample.stdev / math.sqrt(sample.n)
    return sample.mean - half, sample.mean + half


def random_effects(batches: Sequence[Sample]) -> tuple[Sample, Interval] | None:
    """The config's mean over several batches and its 95% interval, by the DerSimonian-Laird
    random-effects estimate: each batch mean weighs by the inverse of its own variance (its
    requests' spread over n) plus the variance between batches (estimated from how much more the
    means differ than their own spreads explain, 0 when they agree). The interval takes
    Student's t at the batches' pooled within-batch degrees of freedom, sum(n - 1): two batches
    whose means happen to agree keep their requests' spread, and two that disagree widen it by
    the spread between them, without the 12.7 of t at one degree of freedom over two means.

    Returned as a `Sample` that Welch's test reads as the estimate (its mean, standard error
    times the square root of n, and n = the degrees of freedom + 1); None unless there are two
    or more batches, each with a spread above 0."""
    if len(batches) < 2 or not all(b.has_spread and b.stdev for b in batches):
        return None
    means = np.array([b.mean for b in batches], dtype=np.float64)
    own = np.array([(b.stdev or 0.0) ** 2 / b.n for b in batches], dtype=np.float64)
    weights = 1.0 / own
    fixed = float(np.sum(weights * means) / np.sum(weights))
    q = float(np.sum(weights * (means - fixed) ** 2))
    scale = float(np.sum(weights) - np.sum(weights**2) / np.sum(weights))
    between = max(0.0, (q - (len(batches) - 1)) / scale) if scale > 0 else 0.0
    combined = 1.0 / (own + between)
    mean = float(np.sum(combined * means) / np.sum(combined))
    standard_error = math.sqrt(1.0 / float(np.sum(combined)))
    df = sum(b.n - 1 for b in batches)
    half = t_critical(df) * standard_error
    sample = Sample(mean=mean, stdev=standard_error * math.sqrt(df + 1), n=df + 1)
    return sample, (mean - half, mean + half)


def wilson_interval(successes: int, trials: int) -> Interval | None:
    """The 95% Wilson score interval of a proportion: within [0, 1] and around successes /
    trials, for any count (None without trials)."""
    if trials <= 0 or not 0 <= successes <= trials:
        return None
    z = float(scipy_stats.norm.ppf(0.5 + CONFIDENCE / 2))
    share = successes / trials
    denominator = 1 + z**2 / trials
    center = (share + z**2 / (2 * trials)) / denominator
    half = z * math.sqrt(share * (1 - share) / trials + z**2 / (4 * trials**2)) / denominator
    # Rounding must not leave the figure itself outside its interval (0 or 1 of a few trials).
    return max(0.0, min(share, center - half)), min(1.0, max(share, center + half))


def welch_p(first: Sample | None, second: Sample | None) -> float | None:
    """Welch's two-sided p-value for equal means; None when either sample lacks spread."""
    return welch_ps([(first, second)])[0]


@dataclass(frozen=True)
class SampleColumns:
    """Many samples as columns (`summary_sample`'s rule applied to each): means, standard
    deviations and sizes as floats, and whether each is a sample with spread (the only ones
    Welch's test asks). A ranking's 5,000 rows are decided together this way when a run is
    recorded."""

    mean: np.ndarray
    stdev: np.ndarray
    n: np.ndarray
    spread: np.ndarray

    @classmethod
    def of_summaries(
        cls, means: Sequence[object], stdevs: Sequence[object], sizes: Sequence[object]
    ) -> SampleColumns:
        """`summary_sample` of each (mean, stdev, n), as columns."""
        mean, stdev, n = (_floats(values) for values in (means, stdevs, sizes))
        with np.errstate(invalid="ignore"):
            present = np.isfinite(mean) & np.isfinite(n) & (n > 0) & (n == np.floor(n))
            spread = present & (n >= 2) & np.isfinite(stdev) & (stdev >= 0)
        return cls(mean=mean, stdev=stdev, n=n, spread=spread)

    @classmethod
    def of_samples(cls, samples: Sequence[Sample | None]) -> SampleColumns:
        return cls.of_summaries(
            [s.mean if s else None for s in samples],
            [s.stdev if s else None for s in samples],
            [s.n if s else None for s in samples],
        )

    def take(self, indices: np.ndarray) -> SampleColumns:
        return SampleColumns(
            *(column[indices] for column in (self.mean, self.stdev, self.n, self.spread))
        )


_NUMBER_TYPES = frozenset({float, int, type(None)})


def _floats(values: Sequence[object]) -> np.ndarray:
    """Stored numbers as floats, NaN for anything that is not one (`finite`'s rule)."""
    if _NUMBER_TYPES.issuperset(map(type, values)):
        return np.array(values, dtype=np.float64)  # None reads as NaN
    kept = [
        value if isinstance(value, int | float) and not isinstance(value, bool) else None
        for value in values
    ]
    return np.array(kept, dtype=np.float64)


def welch_ps(pairs: Sequence[tuple[Sample | None, Sample | None]]) -> list[float | None]:
    """`welch_p` of each pair, computed for all of them at once (the answer pages ask a few
    hundred pairs a request, one or two at a time: no columns are built for them)."""
    found: list[float | None] = [None] * len(pairs)
    asked, columns = [], []
    for index, (first, second) in enumerate(pairs):
        if first is None or second is None or not (first.has_spread and second.has_spread):
            continue
        asked.append(index)
        columns.append((first.mean, first.stdev, first.n, second.mean, second.stdev, second.n))
    if asked:
        p = _welch_p(*np.array(columns, dtype=np.float64).T)
        for index, value in zip(asked, p.tolist(), strict=True):
            found[index] = value
    return found


def welch_p_columns(first: SampleColumns, second: SampleColumns) -> np.ndarray:
    """Welch's two-sided p of each pair of samples (first[i], second[i]); NaN where the test
    cannot be asked (either side lacks spread)."""
    p = np.full(len(first.spread), np.nan)
    tested = np.flatnonzero(first.spread & second.spread)
    if len(tested):
        p[tested] = _welch_p(
            *(side[tested] for side in (first.mean, first.stdev, first.n)),
            *(side[tested] for side in (second.mean, second.stdev, second.n)),
        )
    return p


def _welch_p(
    mean: np.ndarray,
    stdev: np.ndarray,
    n: np.ndarray,
    other_mean: np.ndarray,
    other_stdev: np.ndarray,
    other_n: np.ndarray,
) -> np.ndarray:
    """Welch's t and its Welch-Satterthwaite degrees of freedom, as
    scipy.stats.ttest_ind_from_stats(..., equal_var=False) computes them, without its per-call
    overhead: the two-sided p of each pair with spread on both sides (1.0 where it is not a
    finite number). Two samples without any spread are alike only when their means are equal."""
    share = stdev**2 / n
    other_share = other_stdev**2 / other_n
    spread = share + other_share
    with np.errstate(divide="ignore", invalid="ignore"):
        df = spread**2 / (share**2 / (n - 1) + other_share**2 / (other_n - 1))
        t = (mean - other_mean) / np.sqrt(spread)
        p = 2 * scipy_special.stdtr(df, -np.abs(t))
    p = np.where(np.isfinite(p), p, 1.0)
    flat = (stdev == 0) & (other_stdev == 0)
    return np.where(flat, np.where(mean == other_mean, 1.0, 0.0), p)


def indistinguishable(first: Sample | None, second: Sample | None) -> bool | None:
    """Whether Welch's test cannot tell the two means apart at 5%; None when it cannot be asked
    (a side without spread: one batch of one request, or a summary without a deviation)."""
    return indistinguishable_pairs([(first, second)])[0]


def indistinguishable_pairs(
    pairs: Sequence[tuple[Sample | None, Sample | None]],
) -> list[bool | None]:
    """`indistinguishable` of each pair, Welch's p computed for all of them at once."""
    return [None if p is None else p >= ALPHA for p in welch_ps(pairs)]


def indistinguishable_columns(first: SampleColumns, second: SampleColumns) -> list[bool | None]:
    """`indistinguishable` of each pair of samples (first[i], second[i])."""
    return [None if math.isnan(p) else p >= ALPHA for p in welch_p_columns(first, second).tolist()]


def ratio_interval(numerator: Sample | None, denominator: Sample | None) -> Interval | None:
    """A 95% interval of numerator mean / denominator mean: the delta method on the log of the
    ratio with Welch's degrees of freedom; None without spread on both sides."""
    if numerator is None or denominator is None:
        return None
    if not (numerator.has_spread and denominator.has_spread):
        return None
    if numerator.mean <= 0 or denominator.mean <= 0:
        return None
    assert numerator.stdev is not None and denominator.stdev is not None
    ratio = numerator.mean / denominator.mean
    own = (numerator.stdev / numerator.mean) ** 2 / numerator.n
    base = (denominator.stdev / denominator.mean) ** 2 / denominator.n
    if own + base == 0:
        return ratio, ratio
    df = (own + base) ** 2 / (own**2 / (numerator.n - 1) + base**2 / (denominator.n - 1))
    half = t_critical(max(1.0, df)) * math.sqrt(own + base)
    return ratio * math.exp(-half), ratio * math.exp(half)


def log_standard_error(value: float, interval: Interval | None) -> float | None:
    """The standard error of log(value) that a 95% interval of a ratio implies (normal scale)."""
    if interval is None or value <= 0 or interval[0] <= 0 or interval[1] <= 0:
        return None
    return (math.log(interval[1]) - math.log(interval[0])) / (
        2 * float(scipy_stats.norm.ppf(0.975))
    )


def ratios_indistinguishable(
    first: float, first_interval: Interval | None, second: float, second_interval: Interval | None
) -> bool | None:
    """Whether two ratios (speedups) are within noise of each other: the difference of their logs
    against its standard error at 5%; None when either has no interval."""
    first_se = log_standard_error(first, first_interval)
    second_se = log_standard_error(second, second_interval)
    if first_se is None or second_se is None or first <= 0 or second <= 0:
        return None
    spread = math.hypot(first_se, second_se)
    difference = abs(math.log(first) - math.log(second))
    if spread == 0:
        return difference == 0
    return difference <= float(scipy_stats.norm.ppf(0.975)) * spread
