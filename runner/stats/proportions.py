"""Shares and their intervals: the Wilson 95% interval of a share (``wilson_interval``, which
goodput uses too), and the quality protocol's accuracy and its paired difference against the
baseline (runner.protocols.quality): Newcombe's paired interval and McNemar's exact test."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

# Two-sided 95% normal quantile for the Wilson interval of a share.
_Z95 = 1.959963984540054


def wilson_interval(successes: int, trials: int) -> tuple[float | None, float | None]:
    """The Wilson score 95% interval of a share; (None, None) for no trials."""
    if trials <= 0:
        return None, None
    share = successes / trials
    denominator = 1.0 + _Z95**2 / trials
    centre = (share + _Z95**2 / (2 * trials)) / denominator
    half = _Z95 * math.sqrt(share * (1 - share) / trials + _Z95**2 / (4 * trials**2)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact_p(only_first: int, only_second: int) -> float:
    """McNemar's exact two-sided p-value for paired outcomes: under no difference, each of the
    ``only_first + only_second`` discordant pairs falls either way with probability 1/2, so the
    p-value is twice the binomial tail of the smaller count (at most 1)."""
    if only_first < 0 or only_second < 0:
        raise ValueError("discordant counts cannot be negative")
    discordant = only_first + only_second
    smaller = min(only_first, only_second)
    # Kept an int (typeshed says int ** int is Any): int / int is correctly rounded at any size,
    # where a float would overflow past 2**1023.
    outcomes: int = 2**discordant
    tail = sum(math.comb(discordant, k) for k in range(smaller + 1)) / outcomes
    return min(1.0, 2.0 * tail)


def paired_difference_interval(
    both: int, only_first: int, only_second: int, neither: int
) -> tuple[float, float]:
    """Newcombe's 95% interval for the difference of two paired proportions (his method 10,
    "square and add" of each side's Wilson interval, with the continuity-corrected correlation
    phi: Newcombe, Statistics in Medicine 17:2635-2650, 1998), for first minus second.

    ``both``, ``only_first``, ``only_second`` and ``neither`` are the pairs where both sides
    succeeded, only the first, only the second, and neither."""
    counts = (both, only_first, only_second, neither)
    if min(counts) < 0:
        raise ValueError("pair counts cannot be negative")
    pairs = sum(counts)
    if pairs == 0:
        raise ValueError("a difference of proportions needs at least one pair")
    first_yes, second_yes = both + only_first, both + only_second
    first_no, second_no = pairs - first_yes, pairs - second_yes
    p1, p2 = first_yes / pairs, second_yes / pairs
    low1, high1 = wilson_interval(first_yes, pairs)
    low2, high2 = wilson_interval(second_yes, pairs)
    phi = 0.0
    if min(first_yes, first_no, second_yes, second_no) > 0:
        cross = both * neither - only_first * only_second
        # The continuity correction: a positive cross-product is reduced by half the pairs.
        corrected = max(0.0, cross - pairs / 2) if cross > 0 else float(cross)
        phi = corrected / math.sqrt(first_yes * first_no * second_yes * second_no)
    below1, above1 = p1 - float(low1 or 0.0), float(high1 or 0.0) - p1
    below2, above2 = p2 - float(low2 or 0.0), float(high2 or 0.0) - p2
    difference = p1 - p2
    lower = math.sqrt(max(0.0, below1**2 - 2 * phi * below1 * above2 + above2**2))
    upper = math.sqrt(max(0.0, above1**2 - 2 * phi * above1 * below2 + below2**2))
    return max(-1.0, difference - lower), min(1.0, difference + upper)


def accuracy(correct: Sequence[bool]) -> dict[str, Any] | None:
    """The accuracy of some scored answers: tasks, correct answers, the share correct and its
    Wilson 95% interval; None with no answer."""
    if not correct:
        return None
    right = sum(1 for answer in correct if answer)
    low, high = wilson_interval(right, len(correct))
    return {
        "tasks": len(correct),
        "correct": right,
        "accuracy": right / len(correct),
        "ci95_low": low,
        "ci95_high": high,
    }


def accuracy_figures(records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A section's accuracy on the quality protocol's tasks, from its measured records' scores
    (``accuracy``); None where no record carries a score."""
    return accuracy([bool(score["correct"]) for score in _scores(records)])


def task_pairs(
    scores: Sequence[tuple[str, bool]], baseline_scores: Sequence[tuple[str, bool]]
) -> list[tuple[bool, bool]]:
    """(correct, the baseline's correct) of each scored task the baseline answered too, from
    (task id, correct) of each side's answers."""
    baseline = dict(baseline_scores)
    return [(correct, baseline[task]) for task, correct in scores if task in baseline]


def paired_difference(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any] | None:
    """The config's accuracy minus its paired baseline's over (correct, the baseline's correct)
    pairs: the four pair counts, the difference, Newcombe's paired 95% interval
    (``paired_difference_interval``) and McNemar's exact p-value; None without pairs."""
    if not pairs:
        return None
    counts = Counter(pairs)
    both, only_speculative = counts[(True, True)], counts[(True, False)]
    only_baseline, neither = counts[(False, True)], counts[(False, False)]
    low, high = paired_difference_interval(both, only_speculative, only_baseline, neither)
    return {
        "pairs": len(pairs),
        "both_correct": both,
        "only_speculative_correct": only_speculative,
        "only_baseline_correct": only_baseline,
        "neither_correct": neither,
        "difference": (only_speculative - only_baseline) / len(pairs),
        "ci95_low": low,
        "ci95_high": high,
        "mcnemar_p": mcnemar_exact_p(only_speculative, only_baseline),
    }


def quality_difference(
    records: Sequence[Mapping[str, Any]], baseline_records: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The config's accuracy minus its paired baseline's on the same tasks, paired by task id
    (``paired_difference``); None without scored pairs."""
    return paired_difference(
        task_pairs(
            [(s["task_id"], bool(s["correct"])) for s in _scores(records)],
            [(s["task_id"], bool(s["correct"])) for s in _scores(baseline_records)],
        )
    )


def _scores(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [record["quality"] for record in records if record.get("quality") is not None]
