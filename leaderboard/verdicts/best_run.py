"""The one rule that picks a config's best run, and what a run's ranking figure is.

The seed's rule stays the headline: the batch with the best average ("best of k", disclosed by
k beside it). A run ranks by its tok/s in its own definition, except under the concurrency
protocol, where per-request decode pooled over levels weights the high levels by their request
counts: such a run ranks by its aggregate tok/s (a wave's generated tokens over its wall time,
its rounds the samples) at its lowest level.

A batch that degenerated (repetitive or early-stopped output) or is noisy is chosen only when no
clean batch exists; the row then carries the flag, and no answer crowns it. Noisy is the row's
flag's rule, all three of `verdicts.noise` (an outlier request, an interval reaching 0, a wide
spread), which the services pass in as `noisy`; this module holds the spread rule: the batch's
repeats of one workload spread by more than half their mean (a standard deviation over
`NOISY_SPREAD` of it: one request of three taking 45 s where the others took 2-3 s). Only the
quick and concurrency protocols repeat one workload; the others' spread mixes depths or
categories by design and says nothing of noise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from leaderboard.verdicts.statistics import Sample, summary_sample

CONCURRENCY = "concurrency"
# A batch whose standard deviation exceeds this share of its mean says little about its mean.
NOISY_SPREAD = 0.5
REPEATING_PROTOCOLS = ("quick", CONCURRENCY)


class RunLike(Protocol):
    """What the rule reads of a run (a `leaderboard.models.Run`)."""

    @property
    def pk(self) -> int | None: ...

    n: int
    degenerate: bool
    tps_definition: str
    decode_mean: float | None
    decode_stdev: float | None
    e2e_mean: float | None
    e2e_stdev: float | None


def level_points(points: object) -> dict[int, dict]:
    """A concurrency result's points by level (the first point of a level wins)."""
    by_level: dict[int, dict] = {}
    for point in points if isinstance(points, list) else []:
        if not isinstance(point, dict):
            continue
        level = point.get("concurrency")
        if isinstance(level, int) and not isinstance(level, bool) and level >= 1:
            by_level.setdefault(level, point)
    return dict(sorted(by_level.items()))


def aggregate_sample(point: dict | None) -> Sample | None:
    """A concurrency level's aggregate tok/s over its rounds (each round one value)."""
    if not isinstance(point, dict):
        return None
    stats = point.get("aggregate_tokens_per_second")
    if not isinstance(stats, dict):
        return None
    return summary_sample(stats.get("mean"), stats.get("stdev"), stats.get("n"))


def lowest_level(points: object) -> tuple[int, Sample] | None:
    """The lowest concurrency level with an aggregate figure, and that figure's sample."""
    for level, point in level_points(points).items():
        if (sample := aggregate_sample(point)) is not None:
            return level, sample
    return None


def lowest_level_pair(
    points: object, baseline_points: object
) -> tuple[Sample, Sample | None] | None:
    """A concurrency result's lowest level (its rounds' sample) and the baseline's sample at
    that same level (None where the baseline lacks it); None without a lowest level."""
    own = lowest_level(points)
    if own is None:
        return None
    level, sample = own
    return sample, aggregate_sample(level_points(baseline_points).get(level))


def run_sample(run: RunLike, *, points: object = None, protocol: str = "") -> Sample | None:
    """The sample a run's ranking figure is the mean of: its requests in its tok/s definition,
    or, under the concurrency protocol, its lowest level's rounds of aggregate tok/s."""
    if protocol == CONCURRENCY:
        lowest = lowest_level(points)
        return lowest[1] if lowest else None
    if run.tps_definition == "decode":
        return summary_sample(run.decode_mean, run.decode_stdev, max(run.n, 1))
    return summary_sample(run.e2e_mean, run.e2e_stdev, max(run.n, 1))


def is_noisy(sample: Sample | None, *, protocol: str) -> bool:
    """Whether a batch's repeats of one workload spread too widely for its mean to stand for it
    (see the module's rule)."""
    if protocol not in REPEATING_PROTOCOLS or sample is None or not sample.has_spread:
        return False
    assert sample.stdev is not None
    return sample.mean <= 0 or sample.stdev > NOISY_SPREAD * sample.mean


def best_run[R: RunLike](
    runs: Sequence[R],
    *,
    sample: Callable[[R], Sample | None],
    protocol: str,
    noisy: Callable[[R], bool] | None = None,
) -> R | None:
    """The config's best batch: the highest figure among clean batches (neither degenerate nor
    noisy by `noisy`, the row's flag's rules; by the spread rule alone without it), else among
    those that did not degenerate, else among all; None without runs."""
    if not runs:
        return None
    figured = [(run, sample(run)) for run in runs]

    settled = [p for p in figured if p[1] and not p[0].degenerate]
    clean = [p for p in settled if _is_clean(p, noisy=noisy, protocol=protocol)]
    pool = clean or settled or figured
    return max(pool, key=_figure)[0]


def _is_clean[R: RunLike](
    pair: tuple[R, Sample | None], *, noisy: Callable[[R], bool] | None, protocol: str
) -> bool:
    """Not noisy: by the row's flag's rules where given, else by the spread rule alone."""
    if noisy is not None:
        return not noisy(pair[0])
    return not is_noisy(pair[1], protocol=protocol)


def _figure(pair: tuple[RunLike, Sample | None]) -> tuple[float, int]:
    """A batch's mean, the earlier batch first on a tie, so the choice does not move with
    storage order."""
    return (pair[1].mean if pair[1] else 0.0, -(pair[0].pk or 0))
