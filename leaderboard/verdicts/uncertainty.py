"""A row's uncertainty: which values are its samples, the interval they give, and its speedup's.

The row's figure is the seed's best-of-k batch mean, and the interval shown beside it is that
figure's own: over the best batch's requests (its rounds under the concurrency protocol). A
figure and its interval are decided here once and stored on the row; every page, chart, export,
the API and the terminal client show that same pair.

What ties and comparisons are decided on is the config's estimate, not the best batch's (the
maximum of k noisy means is biased upward and its own interval too narrow):

- several batches, each with a spread: a random-effects estimate over the batch means
  (`statistics.random_effects`: DerSimonian-Laird, Student's t at the pooled within-batch
  degrees of freedom), so that two batches neither collapse to "50.0 - 50.0" when their means
  agree nor explode at one degree of freedom when they differ;
- several batches without a spread: their means, with an interval only from three of them;
- one batch: its requests (or, under the concurrency protocol, its rounds at the level).

A speedup's interval is the interval of the speedup shown: the delta method on the ratio of the
best batch's and its baseline batch's means (Welch's degrees of freedom). A speedup that is a
geometric mean over depths or lengths has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.verdicts.statistics import (
    Interval,
    Sample,
    random_effects,
    ratio_interval,
    sample_of,
    t_interval,
)

BATCH_MEANS = "batch means"
REQUESTS = "requests"
ROUNDS = "rounds"
# Kept for rows stored before a speedup's interval became the interval of the speedup shown.
BATCH_SPEEDUPS = "batch speedups"
# The fewest batch means whose plain t-interval is shown (two give one degree of freedom).
MIN_MEANS_FOR_T = 3


@dataclass(frozen=True)
class Uncertainty:
    """A figure's samples (their summary), its 95% interval and what the samples are."""

    sample: Sample | None
    interval: Interval | None
    basis: str

    @property
    def n(self) -> int:
        return self.sample.n if self.sample else 0


NONE = Uncertainty(sample=None, interval=None, basis="")


def config_uncertainty(
    batches: Sequence[Sample], *, best: Sample | None, unit: str = REQUESTS
) -> Uncertainty:
    """The config's estimate: a random-effects one over its batches when there are several,
    else its one batch's requests (`unit`: "requests", or "rounds" for a concurrency level)."""
    if len(batches) >= 2:
        combined = random_effects(batches)
        if combined is not None:
            estimate, interval = combined
            return Uncertainty(sample=estimate, interval=interval, basis=BATCH_MEANS)
        means = sample_of(batch.mean for batch in batches)
        assert means is not None
        if means.n < MIN_MEANS_FOR_T:
            # Two means without their batches' spreads: no interval, and no test.
            return Uncertainty(
                sample=Sample(mean=means.mean, stdev=None, n=means.n), interval=None, basis=""
            )
        return Uncertainty(sample=means, interval=t_interval(means), basis=BATCH_MEANS)
    if best is None:
        return NONE
    shown = t_interval(best)
    return Uncertainty(sample=best, interval=shown, basis=unit if shown else "")


def speedup_uncertainty(
    *,
    own: Sample | None,
    baseline: Sample | None,
    across_depths: bool = False,
    unit: str = REQUESTS,
) -> Uncertainty:
    """The 95% interval of the speedup shown (the best batch's mean over its baseline batch's):
    the delta method on the log of their ratio; none for a geometric mean over depths."""
    if across_depths:
        return NONE
    interval = ratio_interval(own, baseline)
    if interval is None or own is None:
        return NONE
    return Uncertainty(sample=own, interval=interval, basis=unit)
