"""Ranks on the board: each page row's place in its ranking, as the verdicts decided it.

A row is ranked only among the rows it is comparable with (`verdicts.workloads.ranking_key`:
the same workload, tok/s definition, hardware kind and engine release), and only when it
competes (speculative, measured by our workers on a good build with real weights, not
degenerate): baselines are the denominators, shown apart, and kept-off rows are shown unranked.
Sorted by tok/s the rank and its "indistinguishable from the leader / the row above" labels are
the ones stored when the row's run was recorded (`services.board.rerank`); sorted by another
column, the rank is counted in the database among the same ranking's competing rows, one
aggregate for the page, with no tie labels (ties are a tok/s verdict).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet

from leaderboard.models import LeaderboardEntry

LEADERBOARD_ORDERINGS = {
    "tokens_per_second": "tok/s",
    "speedup": "speedup",
    "acceptance_rate": "acceptance",
    "tau": "tau",
}


@dataclass(frozen=True)
class PageRank:
    """A page row's rank in its ranking (None: not ranked) and its tie labels (None: unknown or
    not asked)."""

    rank: int | None
    like_leader: bool | None = None
    like_above: bool | None = None


NOT_RANKED = PageRank(rank=None)


def page_ranks(
    entries: QuerySet[LeaderboardEntry], page: Sequence[Any], *, offset: int, ordering: str
) -> dict[int, PageRank]:
    """Each page row's rank in its ranking by the sorted column: {id: PageRank}."""
    del offset  # ranks are within each row's ranking, wherever the page starts
    field = ordering if ordering in LEADERBOARD_ORDERINGS else "tokens_per_second"
    if field == "tokens_per_second":
        return {
            entry.pk: PageRank(entry.rank, entry.like_leader, entry.like_above)
            if entry.rank is not None
            else NOT_RANKED
            for entry in page
        }
    higher = _higher_counts(page, field=field)
    return {
        entry.pk: PageRank(higher[entry.pk] + 1) if entry.pk in higher else NOT_RANKED
        for entry in page
    }


def _higher_counts(page: Sequence[Any], *, field: str) -> dict[int, int]:
    """Competing rows of the same ranking with a higher `field` than each ranked page row: one
    aggregate over the rankings on the page."""
    groups = sorted(
        {
            (entry.ranking_key, getattr(entry, field))
            for entry in page
            if entry.rank is not None and getattr(entry, field) is not None
        }
    )
    if not groups:
        return {}
    counts = (
        LeaderboardEntry.objects.filter(rank__isnull=False)
        .order_by()
        .aggregate(
            **{
                f"higher_{index}": Count(
                    "pk", filter=Q(ranking_key=key) & Q(**{f"{field}__gt": value})
                )
                for index, (key, value) in enumerate(groups)
            }
        )
    )
    by_group = {group: counts[f"higher_{index}"] for index, group in enumerate(groups)}
    return {
        entry.pk: by_group[(entry.ranking_key, getattr(entry, field))]
        for entry in page
        if entry.rank is not None and getattr(entry, field) is not None
    }
