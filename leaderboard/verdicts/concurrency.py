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

Acceptance under load is derived here from each level's measured request records, never read
from a point's claim: a level's acceptance is its accepted over drafted tokens and its tau is 1 +
accepted drafts per verify step, both pooled over the level's requests (under concurrency one
request's verify steps are its share of its wave's, so a request has no tau of its own, but a
wave's and a level's are exact). Each figure carries its own interval: the acceptance its
Wilson 95% interval (within [0, 1], around the figure), the tau the ratio estimator's over the
level's rounds (each round one wave: Student's t at rounds - 1, centred on the pooled tau).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from leaderboard.verdicts.best_run import aggregate_sample, level_points
from leaderboard.verdicts.statistics import (
    ALPHA,
    Interval,
    Sample,
    count,
    ratio_interval,
    sample_of,
    t_critical,
    t_interval,
    welch_p,
    wilson_interval,
)
from runner.energy import energy_figures

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
        return _without_a_slower_level(compared)
    return _up_to_first_slower(compared, min(slower))


def _up_to_first_slower(compared: list[LevelVerdict], first_slower: int) -> str:
    """The crossover bounded by the first slower level and the last faster level below it."""
    faster_below = [v.level for v in compared if v.verdict == FASTER and v.level < first_slower]
    if not faster_below:
        return f"at or below {first_slower}"
    return f"between {max(faster_below)} and {first_slower}"


def _without_a_slower_level(compared: list[LevelVerdict]) -> str:
    """The crossover where no compared level is slower: beyond the range if all are faster."""
    if all(v.verdict == FASTER for v in compared):
        return f"not within {compared[0].level}–{compared[-1].level}"
    return NOT_ESTABLISHED


def crossover_text(points: object, baseline_points: object) -> str:
    """The crossover of a concurrency result against its baseline's result, in words."""
    return crossover_of(level_verdicts(points, baseline_points))


@dataclass(frozen=True)
class LevelAcceptance:
    """One level's drafting, from its measured requests: the pooled counts, acceptance (accepted
    over drafted) and tau (1 + accepted drafts per verify step), and both over its rounds."""

    level: int
    drafted: int
    accepted: int
    verify_steps: int
    acceptance: float | None
    tau: float | None
    rounds: int
    acceptance_rounds: Sample | None
    acceptance_interval: Interval | None
    tau_rounds: Sample | None
    tau_interval: Interval | None


def _accepted_by_position(record: dict[str, Any]) -> int:
    # /metrics counts accepted drafts per position; engines without it give the total only
    # (runner.stats.acceptance_and_tau, the runner's own definition).
    positions = record.get("accepted_per_position")
    if isinstance(positions, list) and positions:
        return sum(count(value) or 0 for value in positions)
    return count(record.get("draft_n_accepted")) or 0


def _pooled(records: list[dict[str, Any]]) -> tuple[int, int, int, int]:
    drafted = sum(count(r.get("draft_n")) or 0 for r in records)
    accepted = sum(count(r.get("draft_n_accepted")) or 0 for r in records)
    steps = sum(count(r.get("verify_steps")) or 0 for r in records)
    return drafted, accepted, steps, sum(_accepted_by_position(r) for r in records)


def _pooled_tau_interval(rounds: list[tuple[int, int]]) -> Interval | None:
    """The 95% interval of a level's pooled tau (1 + all accepted drafts over all verify steps)
    over its rounds, each round a cluster: the ratio estimator's standard error (the spread of
    each round's accepted drafts around the pooled ratio times its steps), Student's t at
    rounds - 1; centred on the figure, never below 1. None below two rounds."""
    if len(rounds) < 2:
        return None
    accepted = sum(a for a, _ in rounds)
    steps = sum(s for _, s in rounds)
    ratio = accepted / steps
    mean_steps = steps / len(rounds)
    residual = sum((a - ratio * s) ** 2 for a, s in rounds) / (len(rounds) - 1)
    half = t_critical(len(rounds) - 1) * math.sqrt(residual / len(rounds)) / mean_steps
    return max(1.0, 1.0 + ratio - half), 1.0 + ratio + half


def level_acceptance(requests: object) -> dict[int, LevelAcceptance]:
    """Per concurrency level, its acceptance and tau derived from a result's measured request
    records (warm-ups and records without a level left out), levels in order."""
    by_level = _records_by_level_and_round(requests)
    return {level: _acceptance_at(level, by_level[level]) for level in sorted(by_level)}


def _records_by_level_and_round(
    requests: object,
) -> dict[int, dict[object, list[dict[str, Any]]]]:
    """The measured request records with a level, by level and then by round."""
    by_level: dict[int, dict[object, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for record in requests if isinstance(requests, list) else []:
        if not isinstance(record, dict) or record.get("phase", "measure") != "measure":
            continue
        level = count(record.get("concurrency"))
        if not level:
            continue
        by_level[level][record.get("round")].append(record)
    return by_level


def _acceptance_at(level: int, rounds: dict[object, list[dict[str, Any]]]) -> LevelAcceptance:
    """One level's drafting from its rounds' records, pooled and round by round."""
    drafted, accepted, steps, by_position = _pooled([r for w in rounds.values() for r in w])
    round_rates, round_taus, round_counts = [], [], []
    for wave in rounds.values():
        wave_drafted, wave_accepted, wave_steps, wave_positions = _pooled(wave)
        if wave_drafted:
            round_rates.append(wave_accepted / wave_drafted)
        if wave_steps:
            round_taus.append(1.0 + wave_positions / wave_steps)
            round_counts.append((wave_positions, wave_steps))
    return LevelAcceptance(
        level=level,
        drafted=drafted,
        accepted=accepted,
        verify_steps=steps,
        acceptance=accepted / drafted if drafted else None,
        tau=1.0 + by_position / steps if steps else None,
        rounds=len(rounds),
        acceptance_rounds=sample_of(round_rates),
        # Each figure with its own interval: the pooled acceptance's Wilson interval (within
        # [0, 1], around it), the pooled tau's ratio estimate over the rounds (around it).
        acceptance_interval=wilson_interval(accepted, drafted) if drafted else None,
        tau_rounds=sample_of(round_taus),
        tau_interval=_pooled_tau_interval(round_counts),
    )


# The one basis of a concurrency row's figures, said wherever they are shown.
LOWEST_LEVEL_BASIS = (
    "every figure at the config's lowest concurrency level: aggregate tok/s over its rounds, "
    "the speedup over the paired baseline's same level, acceptance and tau pooled over that "
    "level's requests, J/token over that level's requests"
)


@dataclass(frozen=True)
class LowestLevel:
    """A concurrency result's figures on one basis, its lowest level (`LOWEST_LEVEL_BASIS`): its
    rounds' aggregate tok/s, the speedup over the baseline's same level, its drafting and its
    J/token (None where a request lacks its energy)."""

    level: int
    sample: Sample
    interval: Interval | None
    speedup: float | None
    drafting: LevelAcceptance | None
    joules_per_token: float | None


def _measured_records_at(requests: object, level: int) -> list[dict[str, Any]]:
    """The measured request records of one concurrency level."""
    return [
        record
        for record in (requests if isinstance(requests, list) else [])
        if isinstance(record, dict)
        and record.get("phase", "measure") == "measure"
        and count(record.get("concurrency")) == level
    ]


def lowest_level_figures(
    points: object, requests: object, baseline_points: object = None
) -> LowestLevel | None:
    """A concurrency result's figures at its lowest level with an aggregate figure (None
    without one), the speedup over `baseline_points` at that level where it has one."""
    for level, point in level_points(points).items():
        sample = aggregate_sample(point)
        if sample is None:
            continue
        reference = aggregate_sample(level_points(baseline_points).get(level))
        speedup = sample.mean / reference.mean if reference is not None and reference.mean else None
        records = _measured_records_at(requests, level)
        # The runner's energy rule over the level's requests (a wave's shared out by tokens).
        energy = energy_figures(records)["joules_per_token"] if records else None
        return LowestLevel(
            level=level,
            sample=sample,
            interval=t_interval(sample),
            speedup=speedup,
            drafting=level_acceptance(records).get(level),
            joules_per_token=energy,
        )
    return None
