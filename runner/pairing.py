"""Pair a speculative run with its baseline: where output first diverged, speedup, lossless.

This module owns what comparing a config with its paired baseline (same target, context,
protocol and engine flags, no speculation) decides: each request's first divergence from the
baseline's greedy tokens, the speedup at each depth and across depths (their geometric mean),
and whether the run was lossless. The functions take plain values, so the service can derive
the same figures from stored evidence instead of trusting a claim.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.stats import ratio

SYNTHETIC_NOTE = "synthetic acceptance: output is not the model's own"
DIVERGED_NOTE = "output differs from the baseline's greedy output"


@dataclass(frozen=True)
class Pairing:
    """What the baseline says about a run: per-depth and overall speedup, divergence, lossless."""

    point_speedups: list[float | None]
    speedup: float | None
    first_divergences: list[int | None]
    lossless: bool | None
    lossless_note: str | None


def first_divergence(tokens: Sequence[int], reference: Sequence[int]) -> int | None:
    """Index of the first token that differs from the reference's, or None if they are equal."""
    for index, (mine, theirs) in enumerate(zip(tokens, reference, strict=False)):
        if mine != theirs:
            return index
    return None if len(tokens) == len(reference) else min(len(tokens), len(reference))


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


def same_outputs(hashes: Sequence[str], baseline_hashes: Sequence[str]) -> bool | None:
    """Whether two runs' greedy outputs match request by request, from their output hashes;
    None when either run has no outputs or a request without a hash (nothing to compare)."""
    if not hashes or not baseline_hashes or "" in hashes or "" in baseline_hashes:
        return None
    return list(hashes) == list(baseline_hashes)


def pair_with_baseline(
    *,
    points: Sequence[dict[str, Any]],
    baseline_points: Sequence[dict[str, Any]],
    outputs: Sequence[Sequence[int]],
    baseline_outputs: Sequence[Sequence[int]],
    synthetic: bool,
) -> Pairing:
    """Compare a run's points and output tokens with its baseline's, request by request."""
    point_speedups = [
        ratio(
            point["decode_tokens_per_second"]["mean"],
            reference["decode_tokens_per_second"]["mean"],
        )
        for point, reference in zip(points, baseline_points, strict=True)
    ]
    divergences = [
        first_divergence(tokens, reference)
        for tokens, reference in zip(outputs, baseline_outputs, strict=True)
    ]
    lossless, note = lossless_verdict(divergences, synthetic=synthetic)
    return Pairing(
        point_speedups=point_speedups,
        speedup=combined_speedup(point_speedups),
        first_divergences=divergences,
        lossless=lossless,
        lossless_note=note,
    )
