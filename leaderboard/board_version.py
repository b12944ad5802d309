"""The board's change counter: the one reader and the one writer of the `BoardVersion` row.

The counter has two parts. `value` rises on every change of the leaderboard's rows (a recorded
run, a re-ranked row, a retired build), so every cached page misses at once. `row_set` rises only
when rows come, go or change what keeps them off the ranking, so the reads that depend on the
board's shape alone (row counts, filter choices) stay cached across ordinary changes. Readers call
`current()`, which each process memoises for SPECBOARD_BOARD_VERSION_SECONDS so that a cached page
costs no query; writers call `raise_version()` in the transaction that changed the rows.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.db.models import F

from leaderboard.models import BoardVersion

# The counter as this process last read it, and when: (monotonic seconds, (value, row_set)).
_seen: tuple[float, tuple[int, int]] | None = None
# How many times this process was told to forget the counter: the copies of cached pages it
# keeps in memory (selectors.cache) belong to one of these, so forgetting drops them too.
_epoch = 0


def current() -> tuple[int, int]:
    """The leaderboard's change counters: every change, and changes of the row set alone (which rows are on the board and in the ranking).

    Read from the database at most once per SPECBOARD_BOARD_VERSION_SECONDS in each process, so
    a cached page costs no query; a change made by another process shows within that time.
    """
    global _seen
    now = time.monotonic()
    seen = _seen
    if seen is not None and now - seen[0] < settings.SPECBOARD_BOARD_VERSION_SECONDS:
        return seen[1]
    row = BoardVersion.objects.filter(pk=1).values_list("value", "row_set").first()
    value = (row[0], row[1]) if row else (0, 0)
    _seen = (now, value)
    return value


def forget() -> None:
    """Make this process read the counter again (after it raised it itself), and drop the
    copies of cached pages it kept."""
    global _seen, _epoch
    _seen = None
    _epoch += 1


def epoch() -> int:
    """How many times this process forgot the counter (see `forget`)."""
    return _epoch


def raise_version(*, row_set: bool = False) -> None:
    """Tell cached leaderboard pages that rows changed; call after the change, in its transaction.

    `row_set`: rows appeared, went or changed what keeps them off the ranking, so counts and
    filter choices change too (they are cached on this part of the counter alone).
    """
    changes = {"value": F("value") + 1} | ({"row_set": F("row_set") + 1} if row_set else {})
    if not BoardVersion.objects.filter(pk=1).update(**changes):
        BoardVersion.objects.get_or_create(pk=1, defaults={"value": 1, "row_set": 1})
    forget()
