"""What a result's own request records decide, checked against what its summary claims.

Derive, don't trust: a section's summary statistics, draft counts and acceptance rate, and each
depth point's figures, are what ``runner.stats`` computes from the section's measured requests
(``phase: "measure"``, values the runner skips skipped alike), so a figure that disagrees with
its requests beyond float noise is refused. The speedup is derived the same way from a result's
own baseline section, with ``runner.pairing``'s definition; the energy figures from the
requests' ``energy_joules`` (``runner.energy``) and each section's roofline from the result's
engine, host, model and decode speed (``runner.roofline``). The functions take plain JSON data,
so the result model and the service both use them.

Tau, the acceptance by draft position and the degenerate flag are checked like every other
figure: tau and each position's share within float noise, the flag exactly. Under the
concurrency protocol a wave's verify steps and per-position counts come from one shared
``/metrics`` scrape, shared out among its requests so that every level pools to the wave's exact
counts (``runner.engines.concurrent``): a level's and the summary's tau are measurements and
checked; one request's share is not, and its own ``tau`` is null.

A statistic of one value has no spread. ``runner.stats.summarize`` gives it a null stdev and a
null interval; files written before that carry stdev 0.0 and ci95_low == ci95_high == the mean.
Both forms are accepted for n = 1, each whole (a null stdev with a zero-width interval is
neither), and nothing else: a claimed spread or an interval that is not the mean is refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from runner import stats
from runner.config import BenchmarkConfig
from runner.energy import ENERGY_FIGURES, energy_figures, legacy_joules_per_accepted_token
from runner.pairing import combined_speedup, crossover_concurrency, point_speed
from runner.roofline import ROOFLINE_FIGURES, derived_roofline, legacy_roofline

# Float noise between two correct computations of the same figure, never a real difference.
RELATIVE_TOLERANCE = 1e-6
ABSOLUTE_TOLERANCE = 1e-9

# The summary's figures checked against its measured requests (``runner.stats.pooled_figures``).
SUMMARY_FIGURES = (
    "decode_tokens_per_second",
    "end_to_end_tokens_per_second",
    "ttft_ms",
    "draft_tokens",
    "draft_accepted",
    "verify_steps",
    "acceptance_rate",
    "tau",
    "acceptance_by_position",
    "degenerate",
)
# Every point carries its own acceptance rate and tau (``runner.stats.depth_points``).
POINT_FIGURES = ("decode_tokens_per_second", "acceptance_rate", "tau")
# A statistic's figures that one value leaves without a meaning (see the module docstring).
SPREAD_FIGURES = ("stdev", "ci95_low", "ci95_high")
# A concurrency level's own figures, from its requests' rounds (runner.stats.concurrency_figures).
CONCURRENCY_FIGURES = ("aggregate_tokens_per_second", "ttft_ms")


def measured_requests(requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of the measured phase: the only ones a section's figures are computed from."""
    return [record for record in requests if record["phase"] == "measure"]


def _shown(value: Any) -> str:
    """A figure as the JSON it came from: null, true/false, lists element by element."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(item) for item in value) + "]"
    return f"{value:.10g}" if isinstance(value, float) else str(value)


def _one_value_form(claimed: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    """What a statistic of one value may claim: the derived nulls, or (where the claim gives a
    stdev, as files before the null form do) stdev 0.0 and an interval of exactly the mean."""
    if derived.get("n") != 1 or claimed.get("stdev") is None:
        return derived
    mean = derived["mean"]
    return derived | {"stdev": 0.0, "ci95_low": mean, "ci95_high": mean}


def _disagreement(path: str, claimed: Any, derived: Any) -> str | None:
    """The first figure under path whose claim differs from what the requests give, or None."""
    if isinstance(derived, dict):
        if not isinstance(claimed, dict):
            claimed = {}
        if all(name in derived for name in SPREAD_FIGURES):
            derived = _one_value_form(claimed, derived)
        for name, value in derived.items():
            if found := _disagreement(f"{path}.{name}", claimed.get(name), value):
                return found
        return None
    if isinstance(derived, list) and isinstance(claimed, list) and len(claimed) == len(derived):
        for index, (mine, theirs) in enumerate(zip(claimed, derived, strict=True)):
            if found := _disagreement(f"{path}.{index}", mine, theirs):
                return found
        return None
    if isinstance(derived, list) or isinstance(claimed, list):
        agree = False  # One list and one null, or lists of different lengths.
    elif claimed is None or derived is None or isinstance(derived, int):
        # Counts are exact; only figures computed in floating point get a tolerance.
        agree = claimed == derived
    else:
        agree = math.isclose(
            claimed, derived, rel_tol=RELATIVE_TOLERANCE, abs_tol=ABSOLUTE_TOLERANCE
        )
    if agree:
        return None
    return (
        f"{path} is {_shown(claimed)}, but the section's measured requests give {_shown(derived)}"
    )


def evidence_problem(result: dict[str, Any]) -> str | None:
    """The first claim of a result (each section's summary and points) that the section's own
    measured requests contradict, prefixed "baseline: " for the baseline's; None if none does."""
    problem = section_evidence_problem(result)
    if problem is None and result.get("baseline") is not None:
        problem = section_evidence_problem(result["baseline"])
        if problem:
            return f"baseline: {problem}"
    return problem or crossover_problem(result) or roofline_problem(result)


def _point_records(section: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    by_point: dict[int, list[dict[str, Any]]] = {}
    for record in measured_requests(section["requests"]):
        by_point.setdefault(record["point"], []).append(record)
    return by_point


def crossover_problem(result: dict[str, Any]) -> str | None:
    """Whether summary.crossover_concurrency is what the two sections' requests give: the lowest
    level whose aggregate tok/s is below the baseline's (null without a baseline)."""
    claimed = result["summary"].get("crossover_concurrency")
    derived = None
    if result.get("baseline") is not None:
        mine, theirs = _point_records(result), _point_records(result["baseline"])
        points = result["points"]
        speedups = [
            stats.ratio(
                stats.concurrency_figures(mine.get(i, []))["aggregate_tokens_per_second"]["mean"],
                stats.concurrency_figures(theirs.get(i, []))["aggregate_tokens_per_second"]["mean"],
            )
            if point.get("concurrency") is not None
            else None
            for i, point in enumerate(points)
        ]
        derived = crossover_concurrency(points, speedups)
    if claimed != derived:
        return (
            f"summary.crossover_concurrency is {_shown(claimed)}, but the requests of the result "
            f"and its baseline give {_shown(derived)}"
        )
    return None


def _labels_problem(index: int, point: dict[str, Any], records: list[dict[str, Any]]) -> str | None:
    """Whether a point's requests carry its concurrency level (with their rounds) and category."""
    for name in ("concurrency", "category"):
        if any(record.get(name) != point.get(name) for record in records):
            return (
                f"points.{index}.{name} is {_shown(point.get(name))}, but its measured requests "
                f"say {_shown(next(r.get(name) for r in records if r.get(name) != point.get(name)))}"
            )
    if point.get("concurrency") is not None and any(r.get("round") is None for r in records):
        return f"requests: a measured request of point {index} (a concurrency level) has no round"
    return None


def _roofline_disagreement(path: str, claimed: Any, derived: Any) -> str | None:
    """The first roofline figure under path that differs from the derived one: words (rate,
    flag) and nulls exactly, a level list level by level, numbers as ``_disagreement`` has it."""
    if isinstance(derived, list):
        if not isinstance(claimed, list) or len(claimed) != len(derived):
            given = len(claimed) if isinstance(claimed, list) else "none"
            return f"{path} has {given} entries, but the result's own data give {len(derived)}"
        for index, (mine, theirs) in enumerate(zip(claimed, derived, strict=True)):
            if found := _roofline_disagreement(f"{path}.{index}", mine, theirs):
                return found
        return None
    if isinstance(derived, dict):
        claimed = claimed if isinstance(claimed, dict) else {}
        for name, value in derived.items():
            if found := _roofline_disagreement(f"{path}.{name}", claimed.get(name), value):
                return found
        return None
    if isinstance(derived, str) or derived is None or claimed is None:
        if claimed == derived:
            return None
        return f"{path} is {_shown(claimed)}, but the result's own data give {_shown(derived)}"
    found = _disagreement(path, claimed, derived)
    return (
        found.replace("the section's measured requests", "the result's own data") if found else None
    )


def roofline_problem(result: dict[str, Any]) -> str | None:
    """The first section whose summary roofline is not what the result's own engine, host,
    models, requests and rates give (``runner.roofline.derived_roofline``); None if none is.

    A roofline in the target-only form of files written before the step was counted (its five
    ``runner.roofline.ROOFLINE_FIGURES`` only) is checked against that form's own derivation
    (``runner.roofline.legacy_roofline``), so those files still load and a figure altered in
    them is still refused; what the site shows is derived afresh either way.
    """
    sections = [("", result)]
    if result.get("baseline") is not None:
        sections.append(("baseline: ", result["baseline"]))
    for prefix, section in sections:
        claimed = section["summary"].get("roofline")
        # The old form has its five figures only (the result model fills the rest with null).
        legacy = isinstance(claimed, dict) and all(
            value is None for name, value in claimed.items() if name not in ROOFLINE_FIGURES
        )
        derive = legacy_roofline if legacy else derived_roofline
        derived = derive(section, run=result)
        if claimed is None or derived is None:
            if claimed != derived:
                given = "null" if claimed is None else "given"
                gives = "null" if derived is None else "one"
                return (
                    f"{prefix}summary.roofline is {given}, but the result's engine, host and "
                    f"model give {gives}"
                )
            continue
        for name, value in derived.items():
            path = f"{prefix}summary.roofline.{name}"
            if name == "flag":
                if claimed.get(name) != value:
                    shown = _shown(claimed.get(name))
                    return f"{path} is {shown}, but its fraction gives {_shown(value)}"
            elif found := _roofline_disagreement(path, claimed.get(name), value):
                return found
    return None


def section_evidence_problem(section: dict[str, Any]) -> str | None:
    """The first claim of a section (summary, points) that its measured requests contradict."""
    summary, points = section["summary"], section["points"]
    records = measured_requests(section["requests"])
    if not records:
        return 'requests: a result needs at least one measured request (phase "measure")'
    derived = stats.pooled_figures(records)
    if derived["decode_tokens_per_second"]["n"] == 0:
        return "requests: no measured request has a decode speed (decode_tokens_per_second)"
    for name in SUMMARY_FIGURES:
        if found := _disagreement(f"summary.{name}", summary[name], derived[name]):
            return found
    energy = energy_figures(records)
    for name in ENERGY_FIGURES:
        if found := _disagreement(f"summary.{name}", summary.get(name), energy[name]):
            return found
    # Files written before it was dropped: checked as they defined it, never shown.
    if summary.get("joules_per_accepted_token") is not None:
        legacy = legacy_joules_per_accepted_token(records)
        claimed = summary["joules_per_accepted_token"]
        if found := _disagreement("summary.joules_per_accepted_token", claimed, legacy):
            return found
    if not points:
        return None  # A section without per-depth points claims no more figures to check.
    by_point: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_point.setdefault(record["point"], []).append(record)
    if (last := max(by_point)) >= len(points):
        return f"requests: a measured request is at point {last}, past the points"
    for index, point in enumerate(points):
        mine = by_point.get(index, [])
        figures = stats.pooled_figures(mine)
        for name in POINT_FIGURES:
            if found := _disagreement(f"points.{index}.{name}", point[name], figures[name]):
                return found
        if found := _labels_problem(index, point, mine):
            return found
        if point.get("concurrency") is not None:
            level = stats.concurrency_figures(mine)
            for name in CONCURRENCY_FIGURES:
                claimed = point.get(name) or {}
                if found := _disagreement(f"points.{index}.{name}", claimed, level[name]):
                    return found
    return None


def derived_speedup(result: dict[str, Any]) -> float | None:
    """A result's speedup from its own sections' measured requests, as the runner defines it (per
    point the ratio of mean decode tok/s, or for a concurrency level of mean aggregate tok/s, to
    the baseline's, across points their geometric mean); None for a result without a baseline
    section."""
    baseline = result.get("baseline")
    if baseline is None:
        return None
    points, baseline_points = (
        stats.depth_points(
            BenchmarkConfig.from_canonical(section["config"]),
            measured_requests(section["requests"]),
        )
        for section in (result, baseline)
    )
    return combined_speedup(
        [
            stats.ratio(point_speed(point), point_speed(reference))
            for point, reference in zip(points, baseline_points, strict=True)
        ]
    )
