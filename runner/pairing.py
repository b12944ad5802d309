"""Pair a speculative run with its baseline: where output first diverged, speedup, fidelity.

This module owns what comparing a config with its paired baseline (same target, context,
protocol, prompts and engine flags, no speculation) decides: each request's first divergence
from the baseline's greedy tokens and every divergence's class (``runner.fidelity``), the
speedup at each depth, concurrency level or category and across them (their geometric mean), the
concurrency crossover, the run's fidelity grade, and ``lossless``, kept as "every request
identical". A point's speed is its mean decode tok/s, or for a concurrency level its mean
aggregate tok/s (``point_speed``). The functions take plain values, so the service can derive the
same figures from stored evidence instead of trusting a claim.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.fidelity import (
    Divergence,
    DivergenceKind,
    FidelityGrade,
    TopTwo,
    fidelity_grade,
    judge_divergences,
)
from runner.stats import ratio

SYNTHETIC_NOTE = "synthetic acceptance: output is not the model's own"
DIVERGED_NOTE = "output differs from the baseline's greedy output"


@dataclass(frozen=True)
class Pairing:
    """What the baseline says about a run: speedups, divergences, their classes and fidelity."""

    point_speedups: list[float | None]
    speedup: float | None
    first_divergences: list[int | None]
    lossless: bool | None
    lossless_note: str | None
    # Per request: "near tie", "mismatch", "unclassified" or None (identical, or synthetic).
    divergences: list[DivergenceKind | None]
    # Per request: the baseline's top-2 log-probability gap at the first divergence, if known.
    divergence_margins: list[float | None]
    # None for synthetic acceptance, which claims nothing about the model's own output.
    fidelity: FidelityGrade | None
    # The concurrency protocol: the lowest level whose speedup is below 1 (None if none).
    crossover_concurrency: int | None = None
    # Per request: every divergence, judged (runner.fidelity.judge_divergences); None when
    # synthetic. The first one's position, class and margin are the three lists above.
    divergence_lists: list[list[Divergence] | None] | None = None


def first_divergence(tokens: Sequence[int], reference: Sequence[int]) -> int | None:
    """Index of the first token that differs from the reference's, or None if they are equal."""
    for index, (mine, theirs) in enumerate(zip(tokens, reference, strict=False)):
        if mine != theirs:
            return index
    return None if len(tokens) == len(reference) else min(len(tokens), len(reference))


def margin_positions(
    outputs: Sequence[Sequence[int]], baseline_outputs: Sequence[Sequence[int]]
) -> list[int | None]:
    """Per request, the baseline position whose top-2 margin classifies its divergence.

    None where the outputs are identical, or where one output ended first (no token to weigh).
    """
    positions = []
    for tokens, reference in zip(outputs, baseline_outputs, strict=True):
        index = first_divergence(tokens, reference)
        shorter = index is not None and index >= min(len(tokens), len(reference))
        positions.append(None if shorter else index)
    return positions


def combined_speedup(speedups: Sequence[float | None]) -> float | None:
    """One depth's speedup, or across depths the geometric mean of the per-depth speedups."""
    known = [speedup for speedup in speedups if speedup]
    if not known:
        return None
    if len(known) == 1:
        return known[0]
    return math.exp(statistics.fmean(math.log(speedup) for speedup in known))


def lossless_verdict(
    first_divergences: Sequence[int | None], *, synthetic: bool
) -> tuple[bool | None, str | None]:
    """(lossless, note): lossless when no request diverged; unknown for synthetic acceptance."""
    if synthetic:
        return None, SYNTHETIC_NOTE
    lossless = all(index is None for index in first_divergences)
    return lossless, None if lossless else DIVERGED_NOTE


def depth_points(points: object) -> list[dict[str, Any]]:
    """A result's per-depth points that name their depth (concurrency levels name theirs too),
    read defensively from stored JSON."""
    if not isinstance(points, list):
        return []
    return [p for p in points if isinstance(p, dict) and isinstance(p.get("input_tokens"), int)]


def _mean_of(point: dict[str, Any], name: str) -> float | None:
    figures = point.get(name)
    value = figures.get("mean") if isinstance(figures, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def point_speed(point: dict[str, Any]) -> float | None:
    """What a point's speedup compares: mean aggregate tok/s for a concurrency level, else mean
    decode tok/s."""
    if point.get("concurrency") is not None:
        return _mean_of(point, "aggregate_tokens_per_second")
    return _mean_of(point, "decode_tokens_per_second")


def _point_key(point: dict[str, Any]) -> tuple[Any, Any, Any]:
    # The output length too: an output-length sweep's points share their input length.
    return point["input_tokens"], point.get("output_tokens"), point.get("concurrency")


def depth_speedups(points: object, baseline_points: object) -> list[float | None]:
    """Per depth (or concurrency level), the point's speed over the baseline's at the same input
    length and level (None where it has no baseline), from stored points rather than a file's
    claimed ratio."""
    reference = {_point_key(p): point_speed(p) for p in depth_points(baseline_points)}
    return [ratio(point_speed(p), reference.get(_point_key(p))) for p in depth_points(points)]


def crossover_concurrency(
    points: Sequence[dict[str, Any]], speedups: Sequence[float | None]
) -> int | None:
    """The lowest concurrency level whose speedup is below 1: where speculation stops paying;
    None when every level pays, or no point is a concurrency level with a speedup."""
    below = [
        point["concurrency"]
        for point, speedup in zip(points, speedups, strict=True)
        if point.get("concurrency") is not None and speedup is not None and speedup < 1.0
    ]
    return min(below, default=None)


def category_points(points: object) -> list[dict[str, Any]]:
    """A categories result's points that name their category, read defensively from stored JSON."""
    if not isinstance(points, list):
        return []
    return [p for p in points if isinstance(p, dict) and isinstance(p.get("category"), str)]


def category_speedups(points: object, baseline_points: object) -> list[float | None]:
    """Per category, the point's mean decode tok/s over the baseline's in the same category (None
    where it has none; the first point of a name is the category's)."""
    reference: dict[str, float | None] = {}
    for point in category_points(baseline_points):
        reference.setdefault(point["category"], point_speed(point))
    return [ratio(point_speed(p), reference.get(p["category"])) for p in category_points(points)]


def speedup_over_depths(points: object, baseline_points: object) -> float | None:
    """The runner's speedup from stored per-depth (or per-level, or per-category) points: the
    geometric mean of the points' speedups (None if no point pairs)."""
    return combined_speedup(
        depth_speedups(points, baseline_points) or category_speedups(points, baseline_points)
    )


def same_outputs(
    hashes: Sequence[str],
    baseline_hashes: Sequence[str],
    *,
    prompt_hashes: Sequence[str | None] | None = None,
    baseline_prompt_hashes: Sequence[str | None] | None = None,
) -> bool | None:
    """Whether two runs' greedy outputs match request by request, from their output hashes.

    None when either run has no outputs or a request without a hash (nothing to compare), or,
    when both runs' prompt hashes are given, when their requests did not share the same prompts
    (n-gram configs vary the prompt per run, a baseline run on its own does not).
    """
    if not hashes or not baseline_hashes or "" in hashes or "" in baseline_hashes:
        return None
    if prompt_hashes is not None and baseline_prompt_hashes is not None:
        if None in prompt_hashes or list(prompt_hashes) != list(baseline_prompt_hashes):
            return None
    return list(hashes) == list(baseline_hashes)


def pair_with_baseline(
    *,
    points: Sequence[dict[str, Any]],
    baseline_points: Sequence[dict[str, Any]],
    outputs: Sequence[Sequence[int]],
    baseline_outputs: Sequence[Sequence[int]],
    synthetic: bool,
    baseline_top_two: Sequence[TopTwo | None] | None = None,
    baseline_divergences: Sequence[Sequence[Divergence] | None] | None = None,
) -> Pairing:
    """Compare a run's points and output tokens with its baseline's, request by request
    (every divergence judged by ``judged_divergences``)."""
    point_speedups = [
        ratio(point_speed(point), point_speed(reference))
        for point, reference in zip(points, baseline_points, strict=True)
    ]
    divergences = [
        first_divergence(tokens, reference)
        for tokens, reference in zip(outputs, baseline_outputs, strict=True)
    ]
    judged = judged_divergences(
        outputs,
        baseline_outputs,
        synthetic=synthetic,
        baseline_top_two=baseline_top_two,
        baseline_divergences=baseline_divergences,
    )
    firsts = [found[0] if found else None for found in judged]
    kinds: list[DivergenceKind | None] = [first.kind if first else None for first in firsts]
    margins = [first.margin if first else None for first in firsts]
    lossless, note = lossless_verdict(divergences, synthetic=synthetic)
    fidelity = None if synthetic else _fidelity(divergences, judged, outputs)
    return Pairing(
        point_speedups=point_speedups,
        speedup=combined_speedup(point_speedups),
        first_divergences=divergences,
        lossless=lossless,
        lossless_note=note,
        divergences=kinds,
        divergence_margins=margins,
        fidelity=fidelity,
        crossover_concurrency=crossover_concurrency(points, point_speedups),
        divergence_lists=judged,
    )


def _fidelity(
    divergences: list[int | None],
    judged: list[list[Divergence] | None],
    outputs: Sequence[Sequence[int]],
) -> FidelityGrade | None:
    """The run's fidelity grade from each request's judged divergences."""
    return fidelity_grade(
        [
            {"first_divergence": index, "divergences": found, "predicted_n": len(tokens)}
            for index, found, tokens in zip(divergences, judged, outputs, strict=True)
        ]
    )


def judged_divergences(
    outputs: Sequence[Sequence[int]],
    baseline_outputs: Sequence[Sequence[int]],
    *,
    synthetic: bool,
    baseline_top_two: Sequence[TopTwo | None] | None = None,
    baseline_divergences: Sequence[Sequence[Divergence] | None] | None = None,
) -> list[list[Divergence] | None]:
    """Every divergence of each request from the baseline's, judged (None when synthetic).

    ``baseline_divergences`` holds, per request, every divergence as the baseline's margin pass
    judged it (``runner.fidelity.judge_divergences``, with continuations; None where the pass
    gave nothing, judged as without a margin). Without it, ``baseline_top_two`` holds the
    baseline's top two at the position ``margin_positions`` names (None where it names none or
    the margin is unknown), and only the first divergence is judged: the rest of a request
    after a near tie there is unclassified.
    """
    pairs = list(zip(outputs, baseline_outputs, strict=True))
    if synthetic:
        return [None] * len(pairs)
    if baseline_divergences is not None:
        return [
            judge_divergences(tokens, reference, first=None) if found is None else list(found)
            for (tokens, reference), found in zip(pairs, baseline_divergences, strict=True)
        ]
    top_two = list(baseline_top_two) if baseline_top_two is not None else [None] * len(pairs)
    return [
        judge_divergences(tokens, reference, first=known)
        for (tokens, reference), known in zip(pairs, top_two, strict=True)
    ]
