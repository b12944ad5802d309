"""Categories verdicts: each category's acceptance and speedup with an interval over its
prompts, and whether the figure is anecdotal (fewer than `MIN_PROMPTS` prompts).

A category's samples are its prompts: a prompt's acceptance is its accepted over drafted tokens
(pooled over its repeats), its decode tok/s the mean of its requests. The speedup's interval is
the delta method on the ratio of the category's decode mean and the baseline's in that category.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.verdicts.statistics import (
    Interval,
    Sample,
    count,
    finite,
    sample_of,
    t_interval,
)

# Below this many prompts a category's figure is an anecdote, not an estimate.
MIN_PROMPTS = 3


@dataclass(frozen=True)
class CategoryFigures:
    """One category's prompts, acceptance and decode samples over them, and intervals."""

    prompts: int
    acceptance: Sample | None
    acceptance_interval: Interval | None
    decode: Sample | None

    @property
    def anecdotal(self) -> bool:
        return self.prompts < MIN_PROMPTS


def _prompt_key(record: dict[str, Any]) -> object:
    return record.get("prompt_sha256") or record.get("index")


def category_figures(requests: object) -> dict[int, CategoryFigures]:
    """Per point index, its category's figures over its prompts, from a result's requests."""
    by_point: dict[int, dict[object, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for record in requests if isinstance(requests, list) else []:
        if not isinstance(record, dict) or record.get("phase", "measure") != "measure":
            continue
        point = count(record.get("point"))
        if point is None:
            continue
        by_point[point][_prompt_key(record)].append(record)
    found = {}
    for point, prompts in by_point.items():
        rates, speeds = [], []
        for records in prompts.values():
            drafted = sum(count(r.get("draft_n")) or 0 for r in records)
            accepted = sum(count(r.get("draft_n_accepted")) or 0 for r in records)
            if drafted:
                rates.append(accepted / drafted)
            decode = sample_of(finite(r.get("decode_tokens_per_second")) for r in records)
            if decode is not None:
                speeds.append(decode.mean)
        acceptance = sample_of(rates)
        found[point] = CategoryFigures(
            prompts=len(prompts),
            acceptance=acceptance,
            acceptance_interval=t_interval(acceptance),
            decode=sample_of(speeds),
        )
    return found


def by_category(
    points: Sequence[object], figures: dict[int, CategoryFigures]
) -> dict[str, CategoryFigures]:
    """The figures keyed by category name, from a result's points (first point of a name)."""
    named: dict[str, CategoryFigures] = {}
    for index, point in enumerate(points):
        if isinstance(point, dict) and isinstance(point.get("category"), str) and index in figures:
            named.setdefault(point["category"], figures[index])
    return named
