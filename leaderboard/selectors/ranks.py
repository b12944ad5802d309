"""Ranks on the board: each page row's place by the sorted field, computed for the page alone.

It owns the orderings a board can be sorted and ranked by (`LEADERBOARD_ORDERINGS`) and
`page_ranks`: competition ranks within one tok/s definition for tok/s and speedup (decode and
end-to-end rows are never numbered in one ranking), across all rows for acceptance and tau, and
ties with the leader by `interval_relation`, the same test the n_max findings use. Rows of the
concurrency and categories protocols rank only among rows of their own protocol measured alike
(the same levels and lengths, or categories: `ranking_group`): their figures pool other kinds of
requests, and how many of which decides the figure. Every count is one query over the filtered rows in
the database, never a pass over them in Python.
"""

from __future__ import annotations

from django.db.models import Count, F, Q, QuerySet

from leaderboard.models import LeaderboardEntry
from leaderboard.selectors.intervals import Interval, interval_of, interval_relation
from leaderboard.selectors.protocols import SEPARATE_PROTOCOLS

LEADERBOARD_ORDERINGS = {
    "tokens_per_second": "tok/s",
    "speedup": "speedup",
    "acceptance_rate": "acceptance",
    "tau": "tau",
}

# Speedup is a ratio of two tok/s means of one definition, so like tok/s it is ranked within its
# definition; acceptance and tau are defined alike for every source and rank across all rows.
RANKED_WITHIN_DEFINITION = ("tokens_per_second", "speedup")

# A ranking: (tok/s definition, protocol group); the definition is "" for acceptance and tau.
Scope = tuple[str, str]


def ranking_group(entry: LeaderboardEntry) -> str:
    """The rows a row ranks among: for the concurrency and categories protocols (their tok/s
    pools levels or categories) the configs of its protocol alike in what it measured (the same
    levels and lengths, or categories: "concurrency:<variant>"); "" for quick, depth,
    context-sweep and imports."""
    config = entry.config
    return config.workload if config.protocol in SEPARATE_PROTOCOLS else ""


def _scope(entry: LeaderboardEntry, *, within_definition: bool = True) -> Scope:
    return (entry.tps_definition if within_definition else "", ranking_group(entry))


def _scope_q(scope: Scope) -> Q:
    definition, group = scope
    if group:
        protocol, _, variant = group.partition(":")  # Config.workload
        rows = Q(config__protocol=protocol, config__protocol_variant=variant)
    else:
        rows = ~Q(config__protocol__in=SEPARATE_PROTOCOLS)
    return rows & Q(tps_definition=definition) if definition else rows


def page_ranks(
    entries: QuerySet[LeaderboardEntry], page: list[LeaderboardEntry], *, offset: int, ordering: str
) -> dict[int, tuple[int | None, bool]]:
    """Rank a page's rows by the sorted field within the filtered rows: {id: (rank, tied)}.

    The rank is the usual competition rank (one more than the rows with a higher value), among
    the rows of the same tok/s definition for tok/s and speedup; a row without the value has no
    rank. Sorted by tok/s, a row whose 95% interval overlaps its definition's leader's shares
    rank 1; a row without an interval (fewer than two requests) ties with nothing. Only the
    page's rows are ranked, in the database, never every filtered row in Python.
    """
    if not page:
        return {}
    field = ordering if ordering in LEADERBOARD_ORDERINGS else "tokens_per_second"
    if field == "tokens_per_second":
        higher = _faster_counts_on_a_speed_page(entries, page, offset=offset)
        leaders = _leader_intervals(entries, page, offset=offset)
    else:
        higher = _higher_counts(entries, page, field=field)
        leaders = {}
    ranks: dict[int, tuple[int | None, bool]] = {}
    for entry in page:
        if getattr(entry, field) is None:
            ranks[entry.pk] = (None, False)
            continue
        leader = leaders.get(_scope(entry))
        tied = (
            leader is not None
            and entry.pk != leader[0]
            and interval_relation(interval_of(entry.ci95_low, entry.ci95_high, entry.n), leader[1])
            == "overlap"
        )
        ranks[entry.pk] = (1, True) if tied else (higher[entry.pk] + 1, False)
    return ranks


def _leader_intervals(
    entries: QuerySet[LeaderboardEntry], page: list[LeaderboardEntry], *, offset: int
) -> dict[Scope, tuple[int, Interval | None]]:
    """The fastest row of each ranking on the page: {(definition, group): (id, its interval)}.

    On the first page of a tok/s ordering each leader is the first page row of its definition;
    further pages read each one from the tok/s index.
    """
    leaders: dict[Scope, tuple[int, Interval | None]] = {}
    for entry in page:
        if offset == 0 and _scope(entry) not in leaders:
            leaders[_scope(entry)] = (
                entry.pk,
                interval_of(entry.ci95_low, entry.ci95_high, entry.n),
            )
    for scope in {_scope(entry) for entry in page} - set(leaders):
        # NULLS LAST as the tok/s index is built, so the leader is read from it, not sorted for.
        row = (
            entries.filter(_scope_q(scope))
            .order_by(F("tokens_per_second").desc(nulls_last=True), "id")
            .values_list("id", "ci95_low", "ci95_high", "n")
            .first()
        )
        if row is not None:
            leaders[scope] = (row[0], interval_of(row[1], row[2], row[3]))
    return leaders


def _faster_counts_on_a_speed_page(
    entries: QuerySet[LeaderboardEntry], page: list[LeaderboardEntry], *, offset: int
) -> dict[int, int]:
    """Rows of the same ranking faster than each row of a page sorted by tok/s.

    Every row before the page is at least as fast as its first row, so it is faster than any
    page row that is slower than that one; one aggregate over the rows at least that fast counts,
    per ranking on the page, the rows before the page and those strictly faster than its top.
    """
    top, first = page[0].tokens_per_second, page[0].pk
    scopes = sorted({_scope(entry) for entry in page})
    ahead: dict[Scope, int] = dict.fromkeys(scopes, 0)
    above_top: dict[Scope, int] = dict.fromkeys(scopes, 0)
    if offset:
        # Before the page: faster than its first row, or as fast and earlier by id.
        before = Q(tokens_per_second__gt=top) | Q(tokens_per_second=top, pk__lt=first)
        counts = (
            entries.filter(tokens_per_second__gte=top)
            .order_by()
            .aggregate(
                **{
                    f"{kind}_{index}": Count("pk", filter=_scope_q(scope) & rule)
                    for index, scope in enumerate(scopes)
                    for kind, rule in (("ahead", before), ("above", Q(tokens_per_second__gt=top)))
                }
            )
        )
        for index, scope in enumerate(scopes):
            ahead[scope] = counts[f"ahead_{index}"]
            above_top[scope] = counts[f"above_{index}"]
    faster = {}
    for index, entry in enumerate(page):
        scope = _scope(entry)
        before_page = ahead[scope] if entry.tokens_per_second < top else above_top[scope]
        on_page = sum(
            1
            for other in page[:index]
            if _scope(other) == scope and other.tokens_per_second > entry.tokens_per_second
        )
        faster[entry.pk] = before_page + on_page
    return faster


def _higher_counts(
    entries: QuerySet[LeaderboardEntry], page: list[LeaderboardEntry], *, field: str
) -> dict[int, int]:
    """Rows with a higher `field` than each page row, for pages in another order: one pass.

    Counted among the rows of the row's ranking: its protocol group and, where the field is one
    of tok/s, its tok/s definition.
    """
    within = field in RANKED_WITHIN_DEFINITION
    groups = sorted(
        {
            (_scope(entry, within_definition=within), getattr(entry, field))
            for entry in page
            if getattr(entry, field) is not None
        }
    )

    def rule(scope: Scope, value: float) -> Q:
        return Q(**{f"{field}__gt": value}) & _scope_q(scope)

    counts = entries.order_by().aggregate(
        **{
            f"higher_{index}": Count("pk", filter=rule(scope, value))
            for index, (scope, value) in enumerate(groups)
        }
    )
    by_group = {group: counts[f"higher_{index}"] for index, group in enumerate(groups)}
    return {
        entry.pk: by_group[(_scope(entry, within_definition=within), getattr(entry, field))]
        for entry in page
        if getattr(entry, field) is not None
    }
