"""The board's change counter: the one reader and the one writer of the `BoardVersion` row.

The counter has two parts. `value` rises on every change of the leaderboard's rows (a recorded
run, a re-ranked row, a retired build), so every cached page misses at once. `row_set` rises only
when rows come, go or change what keeps them off the ranking, so the reads that depend on the
board's shape alone (row counts, filter choices) stay cached across ordinary changes. Readers call
`current()`, which each process memoises for SPECBOARD_BOARD_VERSION_SECONDS so that a cached page
costs no query; writers call `raise_version()` in the transaction that changed the rows.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.db.models import F
from django.db.models.signals import post_init

from leaderboard.models import BoardVersion, LeaderboardEntry, RankingVersion

# The ranking key that stands for a change that named no ranking (it may be anywhere), and the
# one noted for a row read without its ranking (a read that depends on it is never kept across a
# change).
ANY_RANKING = "*"
UNKNOWN_RANKING = "?"


def answer_key(hardware_id: int, target: str) -> str:
    """The version key of the front page's first answer for a GPU kind and target: which of its
    workloads that answer names (`verdicts.answer_workloads`). Raised with the rankings a change
    touched where it may change what is named (`services.board.rerank`), so the answer is kept
    across a run recorded in a workload it does not name and that does not change which it
    names."""
    digest = hashlib.blake2b(f"{hardware_id}:{target}".encode(), digest_size=12).hexdigest()
    return f"answer:{digest}"


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


def raise_version(*, row_set: bool = False, rankings: Iterable[str] | None = None) -> None:
    """Tell cached leaderboard pages that rows changed; call after the change, in its transaction.

    `row_set`: rows appeared, went or changed what keeps them off the ranking, so counts and
    filter choices change too (they are cached on this part of the counter alone).
    `rankings`: the only rankings whose rows changed (a recorded run names its own); a page
    that read none of them is kept (`ranking_versions`). Without it the change may be anywhere.
    """
    changes = {"value": F("value") + 1} | ({"row_set": F("row_set") + 1} if row_set else {})
    if not BoardVersion.objects.filter(pk=1).update(**changes):
        BoardVersion.objects.get_or_create(pk=1, defaults={"value": 1, "row_set": 1})
    # The counter's new value, as this transaction holds its row: unique to this change.
    value = BoardVersion.objects.filter(pk=1).values_list("value", flat=True).get()
    touched = sorted(set(rankings or ()) - {""}) or [ANY_RANKING]
    RankingVersion.objects.bulk_create(
        [RankingVersion(key=key, value=value) for key in touched],
        update_conflicts=True,
        unique_fields=["key"],
        update_fields=["value"],
    )
    forget()


def ranking_versions(keys: Iterable[str]) -> dict[str, int]:
    """When each of these rankings last changed, and every change that named none ("*"): at
    most one query. A ranking never changed reads 0.

    A version read stands while this process reads the same counter (and has not forgotten
    it): every change raises the counter in the transaction that sets its rankings' versions,
    so a page's several ranking-scoped parts ask the database once for each ranking, not once
    each (seven queries on the front page after a recorded run). A version so kept may be older
    than the rows read after it, never newer: a read kept under it is computed again, at
    worst, once the counter moves."""
    global _versions_seen
    wanted = set(keys) | {ANY_RANKING}
    at = (_epoch, current()[0])
    seen = _versions_seen
    known = seen[1] if seen is not None and seen[0] == at else {}
    if missing := wanted - known.keys():
        found = dict(RankingVersion.objects.filter(key__in=missing).values_list("key", "value"))
        known = known | {key: found.get(key, 0) for key in missing}
        _versions_seen = (at, known)
    return {key: known[key] for key in sorted(wanted)}


# The rankings' versions this process read at its (epoch, counter): see `ranking_versions`.
_versions_seen: tuple[tuple[int, int], dict[str, int]] | None = None


@contextmanager
def recording_rankings() -> Iterator[set[str]]:
    """Collect the ranking of every leaderboard row read (instantiated) inside the block: what a
    page computed there depends on."""
    found: set[str] = set()
    token = _recording.set(found)
    try:
        yield found
    finally:
        _recording.reset(token)


_recording: ContextVar[set[str] | None] = ContextVar("recording_rankings", default=None)


def is_recording() -> bool:
    """Whether a `recording_rankings` block is collecting what is read now."""
    return _recording.get() is not None


def note_rankings(keys: Iterable[str]) -> None:
    """Add rankings to what the `recording_rankings` block around this (if any) depends on."""
    found = _recording.get()
    if found is not None:
        found.update(keys)


def _note_ranking(sender, instance, **kwargs) -> None:
    note_rankings([instance.__dict__.get("ranking_key", UNKNOWN_RANKING)])


post_init.connect(_note_ranking, sender=LeaderboardEntry, dispatch_uid="board-version-rankings")
