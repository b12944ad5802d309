"""A row's uncertainty: which values are its samples, the interval they give, and its speedup's.

The row's number is the seed's best-of-k batch mean. Its uncertainty is the config's, not the
best batch's (the maximum of k noisy means is biased upward and its own interval too narrow):

- several batches: the batch means are the samples (a t-interval over k means, k - 1 degrees
  of freedom), since batches differ (warm-up, n-gram state, clocks);
- one batch: its requests (or, under the concurrency protocol, its rounds at the level).

A speedup's interval likewise: over several batches that each measured their own baseline, the
per-batch speedups (a t-interval on their logs); else the delta method on the ratio of the best
batch's and its baseline batch's means. A speedup that is a geometric mean over depths has no
interval from one batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.verdicts.statistics import (
    Interval,
    Sample,
    geometric_interval,
    ratio_interval,
    sample_of,
    t_interval,
)

BATCH_MEANS = "batch means"
REQUESTS = "requests"
ROUNDS = "rounds"
BATCH_SPEEDUPS = "batch speedups"


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
    """The config's sample: its batches' means when there are several, else its one batch's
    requests (`unit`: "requests", or "rounds" for a concurrency level)."""
    if len(batches) >= 2:
        means = sample_of(batch.mean for batch in batches)
        return Uncertainty(sample=means, interval=t_interval(means), basis=BATCH_MEANS)
    if best is None:
        return NONE
    interval = t_interval(best)
    return Uncertainty(sample=best, interval=interval, basis=unit if interval else "")


def speedup_uncertainty(
    *,
    batch_speedups: Sequence[float | None],
    own: Sample | None,
    baseline: Sample | None,
    across_depths: bool = False,
    unit: str = REQUESTS,
) -> Uncertainty:
    """A speedup's 95% interval: over per-batch speedups when two or more batches measured their
    own; else from the best batch and its baseline batch (not for a geometric mean over depths)."""
    kept = [value for value in batch_speedups if value is not None and value > 0]
    if len(kept) >= 2:
        found = geometric_interval(kept)
        if found is not None and found[1] is not None:
            return Uncertainty(sample=sample_of(kept), interval=found[1], basis=BATCH_SPEEDUPS)
    if across_depths:
        return NONE
    interval = ratio_interval(own, baseline)
    if interval is None or own is None:
        return NONE
    return Uncertainty(sample=own, interval=interval, basis=unit)
