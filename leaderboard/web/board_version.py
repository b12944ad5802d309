"""Which rankings changed, and when: the one writer and the one reader of the `RankingVersion`
rows that the page cache (`leaderboard.web.page_cache`) keys its responses on.

Writers call `raise_version()` in the transaction that changed the rows, naming the rankings it
touched (and `KEPT_OFF` where a row kept off the rankings changed); every change also raises
`EVERY_CHANGE`, and one that rows came to, went from or moved on or off the ranking raises
`ROW_SET` (counts and filter choices change). Readers call
`versions()`: one query for any set of keys.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from django.db import connection
from django.db.models import F

from leaderboard.models import BoardVersion, RankingVersion

# A change that named no ranking (it may be anywhere): every cached page shows it.
ANY_RANKING = "*"
# Rows came, went or changed what keeps them off the ranking.
ROW_SET = "row-set"
# Every change: what a page that names no rankings is kept under.
EVERY_CHANGE = "board"
# A row kept off the rankings changed (a flagged row is in no ranking's order): what a list of
# kept-off rows is kept under, beside ROW_SET.
KEPT_OFF = "kept-off"


def answer_key(hardware_id: int, target: str) -> str:
    """The version key of the front page's first answer for a GPU kind and target: which of its
    workloads that answer names (`verdicts.answer_workloads`). Raised with the rankings a change
    touched where it may change what is named (`services.board.rerank`), so the answer is kept
    across a run recorded in a workload it does not name and that does not change which it
    names."""
    digest = hashlib.blake2b(f"{hardware_id}:{target}".encode(), digest_size=12).hexdigest()
    return f"answer:{digest}"


def raise_version(*, row_set: bool = False, rankings: Iterable[str] | None = None) -> None:
    """Tell cached pages that rows changed; call after the change, in its transaction.

    `row_set`: rows appeared, went or changed what keeps them off the ranking.
    `rankings`: the only rankings whose rows changed (a recorded run names its own); a page
    that shows none of them is kept. Without it the change may be anywhere.
    """
    if not BoardVersion.objects.filter(pk=1).update(value=F("value") + 1):
        BoardVersion.objects.get_or_create(pk=1, defaults={"value": 1, "row_set": 1})
    # The counter's new value, as this transaction holds its row: unique to this change.
    value = BoardVersion.objects.filter(pk=1).values_list("value", flat=True).get()
    touched = (set(rankings or ()) - {""}) or {ANY_RANKING}
    touched |= {EVERY_CHANGE, ROW_SET} if row_set else {EVERY_CHANGE}
    RankingVersion.objects.bulk_create(
        [RankingVersion(key=key, value=value) for key in sorted(touched)],
        update_conflicts=True,
        unique_fields=["key"],
        update_fields=["value"],
    )


def current() -> int:
    """The counter every change raises (0 before the first): no ranking's version is above it."""
    return BoardVersion.objects.filter(pk=1).values_list("value", flat=True).first() or 0


def versions(keys: Iterable[str]) -> dict[str, int]:
    """When each of these keys last changed (0 for never), in one query: in SQL, since every
    kept page asks it, and on PostgreSQL with the keys as one array (the ORM, and a placeholder
    per key, took longer to build the query than the database took to answer it)."""
    wanted = sorted(set(keys))
    table, key, value = map(
        connection.ops.quote_name, (RankingVersion._meta.db_table, "key", "value")
    )
    params: list[list[str]] | list[str]
    if connection.vendor == "postgresql":
        among, params = "= ANY(%s)", [wanted]
    else:
        among, params = f"IN ({', '.join(['%s'] * len(wanted))})", wanted
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {key}, {value} FROM {table} WHERE {key} {among}", params)
        found = dict(cursor.fetchall())
    return {name: found.get(name, 0) for name in wanted}
