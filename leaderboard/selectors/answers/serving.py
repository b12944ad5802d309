"""Reads of what a serving user weighs: latency percentiles, goodput, and the trade-off between
throughput per GPU and speed per user.

Derive, don't trust: every latency figure here is computed from a stored result's measured
requests by the runner's one definition (`runner.stats.latency_figures`: TTFT, TPOT = (e2e -
TTFT) / (output tokens - 1), inter-token latency = the gap between successive streamed content
chunks, end-to-end latency, each as p50 / p90 / p99 with its n, and the goodput at a stated TPOT
objective), never copied from the points a file claims; results recorded before latency was
stored get the same figures from their requests' clocks. A stored request is read defensively:
a field that is missing or not a finite number leaves that request out of that figure.

- `point_latency`: per point index of a stored result (and the whole section, key None).
- `run_latency`: a run's per-point latency with its points' labels, cached with the board.
- `latency_by_level`: a concurrency result's latency per level (the concurrency page and API).
- `concurrency_pareto`: per config of a target and GPU, aggregate tok/s per GPU against tok/s
  per user over the concurrency levels (InferenceX's Pareto view), and the frontier of those
  point estimates.
"""

from __future__ import annotations

import math
from typing import Any

from leaderboard import verdicts
from leaderboard.models import Hardware
from leaderboard.stored_results import Record, StoredResult, stored_result
from leaderboard.verdicts.statistics import count as stored_count
from runner.results import MAX_FIGURE
from runner.stats import (
    DEFAULT_TPOT_OBJECTIVE_MS,
    latency_figures,
    latency_samples,
    percentile_interval,
)

# The row of a run's latency that pools its points: each point weighs by its requests (a
# concurrency run's high levels most), so it describes the run, not any one level.
POOLED_LABEL = "all points pooled (weighted by their requests)"
# The largest TPOT objective a page or the API takes, in ms (an hour a token).
MAX_TPOT_OBJECTIVE_MS = 3_600_000.0
# Words that travel with the figures, on the pages and in the API.
DEFINITIONS = {
    "ttft_ms": "time to first token: from sending the request to its first streamed token "
    "(the server's prompt time for a whole response)",
    "tpot_ms": "time per output token: (end-to-end latency - TTFT) / (output tokens - 1), per "
    "request",
    "itl_ms": "inter-token latency: the gap between successive streamed content chunks, pooled "
    "over the requests' chunks; several tokens of one speculative verify step arrive together, "
    "so many gaps are near 0 (streamed runs only)",
    "e2e_ms": "end-to-end latency: the request's client wall time",
    "percentiles": "p50 / p90 / p99 linear between the closest ranks of the per-request "
    "(per-gap for ITL) samples; n samples; the median's and p99's 95% intervals are "
    "distribution-free (order statistics, binomial coverage), none where n is too small (the "
    "median needs 6 samples, p99 about 370)",
    "goodput": "the share of requests whose TPOT meets the objective, with its Wilson 95% interval",
    "per_user": "1000 / the level's median TPOT (ms)",
    "per_gpu": "the level's aggregate tok/s (a round's generated tokens over its wall time, mean "
    "over rounds) over the hardware's GPU count",
    "frontier": "the points that no other point, of any config and level of the same ranking "
    "(one workload, tok/s definition, GPU and release), beats on both axes (at least as fast per "
    "user and per GPU, faster in one); point estimates, no test of the differences; rows kept "
    "off the ranking (synthetic, test weights, degenerate, ...) are drawn but never on it",
}


def tpot_objective(text: object) -> float:
    """The TPOT objective in ms a query asks for: a finite number above 0 and at most
    MAX_TPOT_OBJECTIVE_MS; the default objective for anything else."""
    if not isinstance(text, str) or not text.strip() or len(text) > 32:
        return DEFAULT_TPOT_OBJECTIVE_MS
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_TPOT_OBJECTIVE_MS
    if math.isfinite(value) and 0 < value <= MAX_TPOT_OBJECTIVE_MS:
        return value
    return DEFAULT_TPOT_OBJECTIVE_MS


def _figure(value: object) -> float | None:
    """A stored latency in ms: a finite number from 0 to the result model's bound, else None."""
    number = verdicts.finite(value)
    return number if number is not None and 0 <= number <= MAX_FIGURE else None


def _clean(record: Record) -> dict[str, Any] | None:
    """The fields of a stored request the latency reads, each a finite number or None; None for
    a request that is not a measured one."""
    if record.get("phase", "measure") != "measure":
        return None
    point = stored_count(record.get("point"))
    arrivals = record.get("chunk_arrival_ms")
    chunks = [_figure(moment) for moment in arrivals] if isinstance(arrivals, list) else []
    tokens = stored_count(record.get("predicted_n"))
    return {
        "point": point,
        "ttft_ms": _figure(record.get("ttft_ms")),
        "wall_ms": _figure(record.get("wall_ms")),
        "predicted_n": tokens,
        # A stream whose arrivals are all numbers and in order; else no inter-token samples.
        "chunk_arrival_ms": chunks
        if None not in chunks and chunks == sorted(chunks)  # type: ignore[type-var]
        else None,
    }


def point_latency(
    stored: StoredResult, *, tpot_ms_objective: float = DEFAULT_TPOT_OBJECTIVE_MS
) -> dict[int | None, dict]:
    """A stored result's latency figures per point index, and the whole section's under None;
    {} for a result without measured requests."""
    records = [r for r in (_clean(r) for r in stored.requests) if r is not None]
    if not records:
        return {}
    groups: dict[int | None, list[dict]] = {None: records}
    for index in sorted({r["point"] for r in records if r["point"] is not None}):
        groups[index] = [r for r in records if r["point"] == index]
    return {
        index: _with_intervals(
            latency_figures(mine, tpot_ms_objective=tpot_ms_objective), latency_samples(mine)
        )
        for index, mine in groups.items()
    }


def _with_intervals(figures: dict, samples: dict[str, list[float]]) -> dict:
    """Each figure's median and p99 with their distribution-free 95% intervals
    (`runner.stats.percentile_interval`; null where too few samples reach one)."""
    for name, values in samples.items():
        for q in (50, 99):
            low, high = percentile_interval(values, q)
            figures[name] |= {f"p{q}_ci95_low": low, f"p{q}_ci95_high": high}
    return figures


def latency_by_level(
    stored: StoredResult, *, tpot_ms_objective: float = DEFAULT_TPOT_OBJECTIVE_MS
) -> dict[int, dict]:
    """A concurrency result's latency figures by level (the first point of a level wins, as
    `verdicts.level_points` reads them)."""
    figures = point_latency(stored, tpot_ms_objective=tpot_ms_objective)
    levels: dict[int, dict] = {}
    for index, point in enumerate(stored.points):
        level = stored_count(point.get("concurrency"))
        if level and level not in levels and index in figures:
            levels[level] = figures[index]
    return levels


def _point_label(point: object, index: int, count: int) -> str:
    if not isinstance(point, dict):
        return f"point {index}"
    level, category, depth = (point.get(k) for k in ("concurrency", "category", "input_tokens"))
    if stored_count(level):
        return f"{level} concurrent"
    if isinstance(category, str) and category:
        return category[:60]
    if stored_count(depth) is not None and count > 1:
        return f"{depth} in"
    return "all requests" if count == 1 else f"point {index}"


def run_latency(*, run_id: int) -> dict | None:
    """A run's latency at the default objective:
    {"rows": [{"label", "latency"}] per point (the whole run first where it has several),
    "objective_ms", "streamed", "definitions"}; None for a run without measured requests."""
    stored = stored_result(run_id, requests=True)
    figures = point_latency(stored)
    if not figures:
        return None
    points = stored.points
    rows = [
        {
            "label": _point_label(points[i] if i < len(points) else None, i, len(points)),
            "latency": f,
        }
        for i, f in sorted((i, f) for i, f in figures.items() if i is not None)
    ]
    if len(rows) > 1:
        rows.insert(0, {"label": POOLED_LABEL, "latency": figures[None]})
    return {
        "rows": rows,
        "objective_ms": DEFAULT_TPOT_OBJECTIVE_MS,
        "streamed": figures[None]["itl_ms"]["n"] > 0,
        "definitions": DEFINITIONS,
    }


def _per_user(latency: dict | None) -> float | None:
    tpot = (latency or {}).get("tpot_ms") or {}
    median = verdicts.finite(tpot.get("p50"))
    return 1000.0 / median if median else None


def _gpu_count(hardware_slug: str) -> int:
    count = Hardware.objects.filter(slug=hardware_slug).values_list("gpu_count", flat=True).first()
    return count if count and count > 0 else 1


def _dominated(point: dict, others: list[dict]) -> bool:
    x, y = point["per_user"], point["per_gpu"]
    return any(
        o["per_user"] >= x and o["per_gpu"] >= y and (o["per_user"] > x or o["per_gpu"] > y)
        for o in others
    )


def _pareto_point(row: dict, *, gpus: int) -> dict | None:
    """A concurrency level's point: tok/s per user against aggregate tok/s per GPU, with the
    interval and the TPOT median it rests on; None where either figure is missing."""
    per_user = _per_user(row.get("latency"))
    aggregate = verdicts.finite(row.get("aggregate"))
    if per_user is None or aggregate is None:
        return None
    low, high = verdicts.finite(row.get("ci95_low")), verdicts.finite(row.get("ci95_high"))
    tpot = row["latency"]["tpot_ms"]
    return {
        "concurrency": row["concurrency"],
        "per_user": per_user,
        "per_gpu": aggregate / gpus,
        "per_gpu_ci95_low": low / gpus if low is not None else None,
        "per_gpu_ci95_high": high / gpus if high is not None else None,
        "tpot_p50_ms": tpot["p50"],
        "tpot_p50_ci95_low": tpot.get("p50_ci95_low"),
        "tpot_p50_ci95_high": tpot.get("p50_ci95_high"),
        "tpot_n": tpot["n"],
        "rounds": row.get("n"),
    }


def _pareto_curves(lines: list[dict], *, gpus: int) -> list[dict]:
    """One curve per config line of the concurrency series with a point to draw."""
    curves = []
    for line in lines:
        found = (_pareto_point(row, gpus=gpus) for row in line.get("rows", []))
        if points := [point for point in found if point is not None]:
            curves.append(
                {
                    "key": line["key"],
                    "label": line["short_label"],
                    "baseline": line["baseline"],
                    "kept_off": line.get("kept_off", False),
                    "flags": line.get("flags", []),
                    "ranking_key": line.get("ranking_key", ""),
                    "ranking_label": line.get("ranking_label", ""),
                    "points": points,
                }
            )
    return curves


def _frontier(curves: list[dict]) -> list[dict]:
    """The points no other point of the curves that compete beats on both axes, each curve's
    points marked whether they are on it."""
    every = [
        point | {"key": curve["key"], "label": curve["label"]}
        for curve in curves
        if not curve["kept_off"]
        for point in curve["points"]
    ]
    frontier = sorted(
        (p for p in every if not _dominated(p, every)), key=lambda p: (p["per_user"], -p["per_gpu"])
    )
    on_frontier = {(p["key"], p["concurrency"]) for p in frontier}
    for curve in curves:
        for point in curve["points"]:
            point["frontier"] = (curve["key"], point["concurrency"]) in on_frontier
    return frontier


def concurrency_pareto(*, lines: list[dict], hardware_slug: str) -> dict:
    """Throughput per GPU against tok/s per user within one ranking (`verdicts.workloads`: the
    one with the most curves that compete; how many curves of others it left out is said), one
    curve per config line of the concurrency series (baselines included, marked), a point per
    level that has both figures, and the Pareto frontier of the points of the rows that are not
    kept off any ranking (DEFINITIONS)."""
    gpus = _gpu_count(hardware_slug)
    every_curve = _pareto_curves(lines, gpus=gpus)
    # A frontier never spans two workloads: the ranking with the most curves that compete.
    sizes: dict[str, int] = {}
    for curve in every_curve:
        sizes[curve["ranking_key"]] = sizes.get(curve["ranking_key"], 0) + (not curve["kept_off"])
    chosen = min(sizes, key=lambda key: (-sizes[key], key)) if sizes else None
    curves = [curve for curve in every_curve if curve["ranking_key"] == chosen]
    frontier = _frontier(curves)
    return {
        "gpu_count": gpus,
        "ranking_label": curves[0]["ranking_label"] if curves else "",
        "other_ranking_curves": len(every_curve) - len(curves),
        "curves": curves,
        "frontier": [
            {k: p[k] for k in ("key", "label", "concurrency", "per_user", "per_gpu")}
            for p in frontier
        ],
        "definitions": {k: DEFINITIONS[k] for k in ("per_user", "per_gpu", "frontier")},
    }
