"""Reads for the categories protocol: per category decode tok/s, acceptance, tau and the
derived speedup, with intervals over the category's prompts and an "anecdotal" mark below three
prompts (`verdicts.categories`; `category_view`), and the speculative config x category heatmap
of acceptance and speedup (`category_targets`, `category_heatmap`). Stored points are read
defensively by the helpers in `selectors.evidence.protocols`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from leaderboard import verdicts
from leaderboard.models import LeaderboardEntry
from leaderboard.selectors.evidence.definitions import baseline_run_id
from leaderboard.selectors.evidence.protocols import (
    CATEGORIES,
    _number,
    _paired_points,
    _protocol_entries,
    _protocol_targets,
    _ratio,
    _short_label,
    _statistics,
)
from leaderboard.stored_results import StoredResult, stored_results


def category_points(points: Sequence[dict]) -> dict[str, dict]:
    """A result's category points by name (the first of a name wins; a point of another shape is
    empty in the view and names none)."""
    by_name: dict[str, dict] = {}
    for point in points:
        name = point.get("category")
        if isinstance(name, str) and name:
            by_name.setdefault(name, point)
    return by_name


def category_rows(
    points: Sequence[dict],
    baseline_points: Sequence[dict] = (),
    *,
    requests: object = None,
    baseline_requests: object = None,
) -> list[dict]:
    """Per category: decode tok/s (n, mean, interval), acceptance, tau, the baseline's decode
    mean and the speedup derived from both; with the requests, the category's prompts, the
    acceptance's and the speedup's intervals over them and whether the figure is anecdotal
    (`verdicts.categories`: fewer than three prompts)."""
    reference = category_points(baseline_points)
    own_prompts = verdicts.categories.by_category(
        points, verdicts.categories.category_figures(requests)
    )
    their_prompts = verdicts.categories.by_category(
        baseline_points, verdicts.categories.category_figures(baseline_requests)
    )
    return [
        _category_row(
            name,
            point,
            reference=reference.get(name),
            prompts=own_prompts.get(name),
            theirs=their_prompts.get(name),
        )
        for name, point in category_points(points).items()
    ]


def _category_row(
    name: str,
    point: dict,
    *,
    reference: dict | None,
    prompts: verdicts.categories.CategoryFigures | None,
    theirs: verdicts.categories.CategoryFigures | None,
) -> dict:
    """One category's row (`category_rows`): its point, the baseline's point of it and both
    sides' figures over its prompts, where the requests are known."""
    decode = _statistics(point, "decode_tokens_per_second")
    baseline = (
        _statistics(reference, "decode_tokens_per_second")["mean"]
        if reference is not None
        else None
    )
    # Each figure with the interval of that figure: the speedup over the prompts' means where
    # both sides' prompts are known (the delta method on that ratio), else the point's.
    speedup = _ratio(decode["mean"], baseline)
    speedup_interval = None
    if prompts and theirs and prompts.decode and theirs.decode:
        speedup = _ratio(prompts.decode.mean, theirs.decode.mean)
        speedup_interval = verdicts.ratio_interval(prompts.decode, theirs.decode)
    acceptance = _number(point.get("acceptance_rate"))
    acceptance_interval = None
    if prompts and prompts.acceptance is not None:
        acceptance, acceptance_interval = prompts.acceptance, prompts.acceptance_interval
    # Nothing, or almost nothing, drafted: no figure of the draft's stands (`verdicts.evidence`).
    thin = bool(prompts and prompts.thin_drafting)
    return {
        "category": name,
        "n": decode["n"],
        "decode": decode["mean"],
        "ci95_low": decode["ci95_low"],
        "ci95_high": decode["ci95_high"],
        "acceptance": acceptance,
        "tau": _number(point.get("tau")),
        "baseline_decode": baseline,
        "speedup": speedup,
        "prompts": prompts.prompts if prompts else None,
        "anecdotal": bool(prompts and prompts.anecdotal),
        "thin_drafting": thin,
        "evidence_note": prompts.evidence.note() if thin and prompts else "",
        "acceptance_ci95_low": acceptance_interval[0] if acceptance_interval else None,
        "acceptance_ci95_high": acceptance_interval[1] if acceptance_interval else None,
        "speedup_ci95_low": speedup_interval[0] if speedup_interval else None,
        "speedup_ci95_high": speedup_interval[1] if speedup_interval else None,
    }


def _speedup_verdict(row: dict) -> str | None:
    if row["thin_drafting"]:
        return None
    low, high = row["speedup_ci95_low"], row["speedup_ci95_high"]
    interval = (low, high) if low is not None and high is not None else None
    return (
        verdicts.against_baseline(interval, row["speedup"]) if row["speedup"] is not None else None
    )


# The chart's lists, each one value per category row.
CHART_LISTS = (
    "acceptance",
    "speedup",
    "decode",
    # The intervals the chart draws as whiskers.
    "acceptance_ci95_low",
    "acceptance_ci95_high",
    "speedup_ci95_low",
    "speedup_ci95_high",
)


def category_view(*, entry: LeaderboardEntry | None) -> dict | None:
    """A categories config's row: per-category figures and the chart's lists; None otherwise."""
    if entry is None or entry.config.protocol != CATEGORIES:
        return None
    stored = stored_results([entry.best_run_id, baseline_run_id(entry)], requests=True)
    own = stored.get(entry.best_run_id or 0) or StoredResult()
    baseline = stored.get(baseline_run_id(entry) or 0)
    rows = (
        category_rows(
            list(own.points),
            _paired_points(own, baseline),
            requests=list(own.requests),
            baseline_requests=_reference_requests(own, baseline),
        )
        if entry.config.is_speculative
        else category_rows(list(own.points), [], requests=list(own.requests))
    )
    if not rows:
        return None
    return {
        "rows": rows,
        "anecdotal": [r["category"] for r in rows if r["anecdotal"]],
        "chart": {
            "categories": [r["category"] for r in rows],
            **{name: [row[name] for row in rows] for name in CHART_LISTS},
            "speculative": entry.config.is_speculative,
            # The verdicts' word on each category's speedup against no drafting, which its
            # bar's colour shows.
            "speedup_verdicts": [_speedup_verdict(r) for r in rows],
        },
    }


def _reference_requests(own: StoredResult, baseline: StoredResult | None) -> list:
    """The paired baseline's requests, from where its points come (`_paired_points`)."""
    paired = own.baseline or baseline
    return list(paired.requests) if paired else []


def category_targets() -> list[tuple[str, str, str]]:
    """(target, hardware slug, GPU name) pairs with categories rows, the most rows first."""
    return _protocol_targets(CATEGORIES)


def acceptance_shade(value: float | None) -> str:
    """The heatmap's cell class for an acceptance rate: heat-0 (none) to heat-9 (nearly all)."""
    return "" if value is None else f"heat-{min(9, max(0, int(value * 10)))}"


def speedup_shade(value: float | None) -> str:
    """The heatmap's cell class for a speedup: gain-1..4 above 1, loss-1..4 below, even near 1."""
    if value is None:
        return ""
    if 0.98 <= value <= 1.02:
        return "even"
    if value > 1:
        return f"gain-{min(4, 1 + int((value - 1) / 0.25))}"
    return f"loss-{min(4, 1 + int((1 - value) / 0.1))}"


def category_heatmap(*, target_name: str, hardware_slug: str) -> dict:
    """Speculative configs x categories of one target on one hardware: each cell the config's
    acceptance and derived speedup in that category, with the classes that colour it."""
    entries = [
        e
        for e in _protocol_entries(CATEGORIES, target_name, hardware_slug)
        if e.config.is_speculative
    ]
    runs = [e.best_run_id for e in entries] + [baseline_run_id(e) for e in entries]
    stored = stored_results(runs, requests=True)
    # Each config's row: its figures by category, then (in place of them) its cells.
    rows: list[dict[str, Any]] = []
    categories: list[str] = []
    for entry in entries:
        own = stored.get(entry.best_run_id or 0) or StoredResult()
        figures = category_rows(
            list(own.points),
            _paired_points(own, stored.get(baseline_run_id(entry) or 0)),
            requests=list(own.requests),
        )
        if not figures:
            continue
        for figure in figures:
            if figure["category"] not in categories:
                categories.append(figure["category"])
        rows.append(
            {
                "entry": entry,
                "label": _short_label(entry.config),
                # Which suite's prompts: a category of suite 1 and of suite 2 holds other prompts.
                "suite": verdicts.prompt_suite(entry.config),
                "figures": figures,
            }
        )
    for row in rows:
        by_name = {figure["category"]: figure for figure in row.pop("figures")}
        row["cells"] = [
            by_name[name]
            | {
                "acceptance_shade": acceptance_shade(by_name[name]["acceptance"]),
                # A category where (almost) nothing was drafted is not coloured as a gain.
                "speedup_shade": ""
                if by_name[name]["thin_drafting"]
                else speedup_shade(by_name[name]["speedup"]),
            }
            if name in by_name
            else None
            for name in categories
        ]
    rows.sort(key=lambda row: (row["label"], row["entry"].config.key))
    return {"categories": categories, "rows": rows}
