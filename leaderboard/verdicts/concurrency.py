"""Concurrency verdicts: per level, whether a config beats its paired baseline, and where it
stops paying (the crossover) with its uncertainty.

A level's samples are its rounds of aggregate tok/s (a wave's generated tokens over its wall
time). Each level is compared with the baseline's same level by Welch's test on the rounds: the
config is "faster" or "slower" there only when the test separates them at 5%, else the level is
"not established". The crossover is then a level interval: between the highest clearly faster
level below the first clearly slower one and that one ("between 2 and 4"), "at or below" the
first clearly slower level when nothing below it is clearly faster, "not within" the levels when
every level is clearly faster, and "not established" when no level is clearly slower but some
cannot be told.
"""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.verdicts.best_run import aggregate_sample, level_points
from leaderboard.verdicts.statistics import ALPHA, Interval, Sample, ratio_interval, welch_p

FASTER = "faster"
SLOWER = "slower"
NOT_ESTABLISHED = "not established"


@dataclass(frozen=True)
class LevelVerdict:
    """One level against the baseline's: both samples, the speedup with its interval, Welch's p
    and the verdict."""

    level: int
    own: Sample
    baseline: Sample | None
    speedup: float | None
    speedup_interval: Interval | None
    p: float | None
    verdict: str


def level_verdicts(points: object, baseline_points: object) -> list[LevelVerdict]:
    """Each level of a concurrency result against the same level of its baseline's result."""
    reference = level_points(baseline_points)
    found = []
    for level, point in level_points(points).items():
        own = aggregate_sample(point)
        if own is None:
            continue
        baseline = aggregate_sample(reference.get(level))
        speedup = own.mean / baseline.mean if baseline and baseline.mean > 0 else None
        p = welch_p(own, baseline)
        if p is not None and p < ALPHA and speedup is not None:
            verdict = FASTER if speedup > 1 else SLOWER
        else:
            verdict = NOT_ESTABLISHED
        found.append(
            LevelVerdict(
                level=level,
                own=own,
                baseline=baseline,
                speedup=speedup,
                speedup_interval=ratio_interval(own, baseline),
                p=p,
                verdict=verdict,
            )
        )
    return found


def crossover_of(verdicts: list[LevelVerdict]) -> str:
    """Where speculation stops paying, in words with its uncertainty (see the module's rule);
    "" when no level has a baseline to compare with."""
    compared = [v for v in verdicts if v.baseline is not None and v.speedup is not None]
    if not compared:
        return ""
    slower = [v.level for v in compared if v.verdict == SLOWER]
    if not slower:
        if all(v.verdict == FASTER for v in compared):
            return f"not within {compared[0].level}–{compared[-1].level}"
        return NOT_ESTABLISHED
    first_slower = min(slower)
    faster_below = [v.level for v in compared if v.verdict == FASTER and v.level < first_slower]
    if not faster_below:
        return f"at or below {first_slower}"
    return f"between {max(faster_below)} and {first_slower}"


def crossover_text(points: object, baseline_points: object) -> str:
    """The crossover of a concurrency result against its baseline's result, in words."""
    return crossover_of(level_verdicts(points, baseline_points))
