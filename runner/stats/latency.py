"""Latency as a serving user sees it (``latency_figures``): time to first token, time per output
token, inter-token latency and end-to-end latency as p50 / p90 / p99 from per-request samples,
with a distribution-free interval of a percentile, and the goodput at a TPOT objective with its
Wilson interval; per section and per point."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from runner.stats.proportions import wilson_interval

# The percentiles every latency figure reports (aiperf's and MLPerf's p50 / p90 / p99).
LATENCY_PERCENTILES = (50, 90, 99)
# The goodput objective when none is stated: a request is good when its time per output token
# is at most this (about 20 tok/s per user, a common interactive target).
DEFAULT_TPOT_OBJECTIVE_MS = 50.0


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) of some values, linear between the closest ranks (numpy's
    default, Hyndman and Fan's type 7, what aiperf reports); None for no values."""
    data = sorted(float(v) for v in values)
    if not data:
        return None
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"a percentile is between 0 and 100, not {q}")
    position = (len(data) - 1) * q / 100.0
    below = math.floor(position)
    above = min(below + 1, len(data) - 1)
    weight = position - below
    return data[below] + weight * (data[above] - data[below])


def latency_percentiles(values: Sequence[float]) -> dict[str, float | int | None]:
    """n, mean, p50, p90, p99 and max of some latencies (``percentile``); all None for none."""
    data = [float(v) for v in values]
    figures: dict[str, float | int | None] = {"n": len(data)}
    figures["mean"] = statistics.fmean(data) if data else None
    for q in LATENCY_PERCENTILES:
        figures[f"p{q}"] = percentile(data, q)
    figures["max"] = max(data) if data else None
    return figures


def tpot_ms(wall_ms: float | None, ttft_ms: float | None, predicted_n: int | None) -> float | None:
    """Time per output token of one request: (end-to-end latency - time to first token) over the
    tokens after the first, (wall_ms - ttft_ms) / (predicted_n - 1); None without a time to first
    token or with fewer than two tokens."""
    if ttft_ms is None or wall_ms is None or not predicted_n or predicted_n < 2:
        return None
    return max(float(wall_ms) - float(ttft_ms), 0.0) / (predicted_n - 1)


def request_tpot_ms(record: Mapping[str, Any]) -> float | None:
    """``tpot_ms`` of one request's record."""
    return tpot_ms(record.get("wall_ms"), record.get("ttft_ms"), record.get("predicted_n"))


def inter_token_gaps_ms(record: Mapping[str, Any]) -> list[float]:
    """Inter-token latencies of one streamed request: the gaps between the arrivals of its
    successive content chunks (``chunk_arrival_ms``). With speculative decoding several tokens
    of one verify step arrive together, so many gaps are near 0: a gap is per chunk received,
    not per token decoded. Empty for a request that was not streamed."""
    arrivals = record.get("chunk_arrival_ms") or []
    return [later - earlier for earlier, later in zip(arrivals, arrivals[1:], strict=False)]


def percentile_interval(values: Sequence[float], q: float) -> tuple[float | None, float | None]:
    """A distribution-free 95% interval of the q-th percentile (0 < q < 100): the order
    statistics x_(l) and x_(u) between which the true percentile lies with probability at
    least 0.95, each tail at most 2.5% (binomial coverage, Conover); (None, None) where the
    sample is too small to reach it (the median needs 6 values, p99 about 370)."""
    data = sorted(float(v) for v in values)
    n, p = len(data), q / 100.0
    if not data or not 0.0 < p < 1.0:
        return None, None
    # Imported here: scipy's import costs more than every other use of this module.
    from scipy.stats import binom

    # X counts the values below the true percentile. Lower rank l: the most with
    # P(X <= l - 1) <= 2.5%; upper rank u: the fewest with P(X <= u - 1) >= 97.5%.
    lower = int(binom.ppf(0.025, n, p))
    if binom.cdf(lower - 1, n, p) > 0.025:
        lower -= 1
    while lower + 1 <= n and binom.cdf(lower, n, p) <= 0.025:
        lower += 1
    upper = max(int(binom.ppf(0.975, n, p)) + 1, 1)
    if lower < 1 or upper > n:
        return None, None
    return data[lower - 1], data[upper - 1]


def goodput(
    records: Sequence[Mapping[str, Any]], *, tpot_ms_objective: float = DEFAULT_TPOT_OBJECTIVE_MS
) -> dict[str, Any]:
    """The share of requests that meet the objective TPOT <= ``tpot_ms_objective`` (aiperf's and
    MLPerf's goodput, as a share of requests), over the requests that have a TPOT, with its
    Wilson 95% interval; the objective travels with the figure."""
    if not math.isfinite(tpot_ms_objective) or tpot_ms_objective <= 0:
        raise ValueError(f"a TPOT objective is a positive number of ms, not {tpot_ms_objective}")
    tpots = [tpot for tpot in (request_tpot_ms(r) for r in records) if tpot is not None]
    met = sum(1 for tpot in tpots if tpot <= tpot_ms_objective)
    low, high = wilson_interval(met, len(tpots))
    return {
        "tpot_ms_objective": float(tpot_ms_objective),
        "requests": len(tpots),
        "met": met,
        "share": met / len(tpots) if tpots else None,
        "ci95_low": low,
        "ci95_high": high,
    }


def latency_samples(records: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """The samples behind each latency figure: per request its time to first token, its time
    per output token (``request_tpot_ms``) and its end-to-end latency (client wall time), and
    every gap between successive streamed chunks (``inter_token_gaps_ms``)."""
    return {
        "ttft_ms": [r["ttft_ms"] for r in records if r.get("ttft_ms") is not None],
        "tpot_ms": [tpot for tpot in (request_tpot_ms(r) for r in records) if tpot is not None],
        "itl_ms": [gap for r in records for gap in inter_token_gaps_ms(r)],
        "e2e_ms": [r["wall_ms"] for r in records if r.get("wall_ms") is not None],
    }


def latency_figures(
    records: Sequence[Mapping[str, Any]], *, tpot_ms_objective: float = DEFAULT_TPOT_OBJECTIVE_MS
) -> dict[str, Any]:
    """The latency a serving user weighs, from some requests: each of ``latency_samples`` as
    ``latency_percentiles``, and the goodput at a TPOT objective (``goodput``)."""
    figures: dict[str, Any] = {
        name: latency_percentiles(values) for name, values in latency_samples(records).items()
    }
    figures["goodput"] = goodput(records, tpot_ms_objective=tpot_ms_objective)
    return figures
