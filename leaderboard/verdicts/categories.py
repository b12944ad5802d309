"""Categories verdicts: each category's acceptance and speedup with the interval of that very
figure, whether it rests on too few prompts (fewer than `MIN_PROMPTS`: anecdotal) and whether
it rests on too little drafting (`verdicts.evidence`: then it has no colour and no word).

- **Acceptance** is the category's accepted over drafted tokens, pooled over its requests, with
  its Wilson 95% interval: within [0, 1] and around the figure, never a t-interval over
  per-prompt rates (which read "62.5%, -242.7% to 392.7%").
- **Speedup** is the ratio of the category's mean decode tok/s over its prompts (each prompt the
  mean of its requests) and the baseline's in that category, with the delta method's interval
  on that same ratio.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.verdicts.evidence import Evidence, evidence_of
from leaderboard.verdicts.statistics import (
    Interval,
    Sample,
    count,
    finite,
    sample_of,
    wilson_interval,
)

# Below this many prompts a category's figure is an anecdote, not an estimate.
MIN_PROMPTS = 3


@dataclass(frozen=True)
class CategoryFigures:
    """One category's prompts, its pooled acceptance with its Wilson interval, its decode
    sample over prompts, and what its drafting rests on."""

    prompts: int
    acceptance: float | None
    acceptance_interval: Interval | None
    decode: Sample | None
    evidence: Evidence

    @property
    def anecdotal(self) -> bool:
        return self.prompts < MIN_PROMPTS

    @property
    def thin_drafting(self) -> bool:
        """Too few drafted tokens or verify steps for its acceptance, tau or speedup to say
        anything about the draft (`verdicts.evidence`)."""
        return self.evidence.anecdotal


def _prompt_key(record: dict[str, Any]) -> object:
    return record.get("prompt_sha256") or record.get("index")


def _by_point(requests: object) -> dict[int, dict[object, list[dict[str, Any]]]]:
    """A result's measured requests by point index, then by prompt (its hash, else its index)."""
    by_point: dict[int, dict[object, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for record in requests if isinstance(requests, list) else []:
        if not isinstance(record, dict) or record.get("phase", "measure") != "measure":
            continue
        point = count(record.get("point"))
        if point is not None:
            by_point[point][_prompt_key(record)].append(record)
    return by_point


def _total(records: list[dict[str, Any]], field: str) -> int:
    return sum(count(record.get(field)) or 0 for record in records)


def _prompts_figures(prompts: dict[object, list[dict[str, Any]]]) -> CategoryFigures:
    """One category's figures over its prompts: each prompt's mean decode tok/s a sample, the
    acceptance over every drafted token with its Wilson interval."""
    records = [record for found in prompts.values() for record in found]
    drafted, accepted = _total(records, "draft_n"), _total(records, "draft_n_accepted")
    decodes = (
        sample_of(finite(r.get("decode_tokens_per_second")) for r in found)
        for found in prompts.values()
    )
    return CategoryFigures(
        prompts=len(prompts),
        acceptance=accepted / drafted if drafted and accepted <= drafted else None,
        acceptance_interval=wilson_interval(accepted, drafted) if drafted else None,
        decode=sample_of(decode.mean for decode in decodes if decode is not None),
        evidence=evidence_of(
            drafted=drafted, verify_steps=_total(records, "verify_steps"), tau=None
        ),
    )


def category_figures(requests: object) -> dict[int, CategoryFigures]:
    """Per point index, its category's figures over its prompts, from a result's requests."""
    return {point: _prompts_figures(prompts) for point, prompts in _by_point(requests).items()}


def by_category(
    points: Sequence[object], figures: dict[int, CategoryFigures]
) -> dict[str, CategoryFigures]:
    """The figures keyed by category name, from a result's points (first point of a name)."""
    named: dict[str, CategoryFigures] = {}
    for index, point in enumerate(points):
        if isinstance(point, dict) and isinstance(point.get("category"), str) and index in figures:
            named.setdefault(point["category"], figures[index])
    return named
