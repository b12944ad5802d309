"""The read side's page cache: leaderboard reads kept until the board's rows change.

`board_cached` stores a computed read under a key made of the board's change counter (see
`leaderboard.board_version`), the read's name and a digest of its parameters, so a change to the
rows makes every cached page miss at once without anyone deleting keys (and the requests that
miss one together compute it once). Reads that depend only on the board's shape (row counts,
filter choices) key on the counter's row_set part and survive ordinary changes. `board_version`
and `forget_board_version` are the counter's reader and memo reset, named here for the callers
that knew them as selectors.

Finer reads: `ranking_cached` keeps a read until a ranking it read (its rows' rankings, noted as
they are read) changes; `ranking_kept` keeps each of several items until a ranking named for it
beforehand changes (the glance's tables, a target's draft advice); `content_cached` keeps each
item under a digest of what it is made of (a rendered board row).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

from django.conf import settings
from django.core.cache import cache

from leaderboard import board_version as board_version_module
from leaderboard.board_version import current as board_version
from leaderboard.board_version import epoch as board_epoch
from leaderboard.board_version import forget as forget_board_version

__all__ = [
    "board_cache_key",
    "board_cached",
    "board_version",
    "content_cached",
    "ranking_cached",
    "ranking_kept",
    "forget_board_version",
    "model_state",
]

_MISSING = object()
# How long a miss may be computed before another request computes it too (a process that died
# computing leaves its mark this long), how long another request waits for it, and how often it
# looks.
COMPUTE_SECONDS = 30
WAIT_SECONDS = 10.0
WAIT_STEP_SECONDS = 0.05
# Each process keeps its own copy of the reads it used last (a key names one version of the
# board, so what it holds never changes): a page served from memory costs no round trip to the
# shared cache, each of which also waited for the interpreter lock behind busy threads. Every
# cached page is bounded (a hundred rows or so): the largest, the front page's board, is 440 KB
# at 1M runs and the API's page 170 KB, so the few pages most read take a few MB, and 256 boards
# at once (a crawler walking every filter) about 110 MB a process.
KEPT_READS = 256
_KEPT: OrderedDict[tuple[int, str], tuple[float, object]] = OrderedDict()
_KEPT_LOCK = threading.Lock()


def board_cache_key(name: str, params: dict, *, row_set_only: bool = False) -> str:
    """The cache key of a leaderboard read at the board's current version."""
    value, row_set = board_version()
    version = f"row-set-{row_set}" if row_set_only else f"{value}"
    return f"board:{version}:{name}:{_params_digest(params)}"


def _params_digest(params: dict) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:32]


def board_cached[T](
    name: str, params: dict, compute: Callable[[], T], *, row_set_only: bool = False
) -> T:
    """A leaderboard read, computed once per change of the rows and kept in the cache.

    The key carries the board version, so a recorded run, a retired build or a re-ranked row
    makes every cached page miss at once; `row_set_only` reads (row counts, filter choices) miss
    only when rows come, go or leave the ranking. The timeout only bounds edits made outside the
    services. Requests that miss the same read at once compute it once: the first computes, the
    others wait for its result (up to WAIT_SECONDS, then compute it themselves). Each process
    also keeps the last KEPT_READS reads it used in memory, for as long as the shared cache does.
    """
    if not row_set_only and board_version_module.is_recording():
        # A read kept per board version hides which rankings it read from the page around it
        # (`ranking_cached`), which would then be kept across their changes.
        raise RuntimeError(f"{name!r} is cached per board version inside a ranking-scoped read")
    key = board_cache_key(name, params, row_set_only=row_set_only)
    found = _kept(key)
    if found is not _MISSING:
        return found
    found = cache.get(key, _MISSING)
    if found is not _MISSING:
        _keep(key, found)
        return found
    # One request computes a miss; the others asking for it meanwhile (every client of a page
    # misses at once when the board changes) wait for its result instead of each computing it
    # again, which on a heavy page starved every other request of the CPU.
    lock = f"{key}:computing"
    computing = cache.add(lock, True, COMPUTE_SECONDS)
    if not computing:
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            time.sleep(WAIT_STEP_SECONDS)
            found = cache.get(key, _MISSING)
            if found is not _MISSING:
                return found
    try:
        found = compute()
        cache.set(key, found, settings.SPECBOARD_BOARD_CACHE_SECONDS)
        _keep(key, found)
    finally:
        if computing:
            cache.delete(lock)
    return found


def _kept(key: str) -> object:
    """This process's copy of a cached read, or _MISSING (none, expired, or forgotten)."""
    with _KEPT_LOCK:
        kept = _KEPT.get((board_epoch(), key))
    if kept is None or kept[0] < time.monotonic():
        return _MISSING
    return kept[1]


def _keep(key: str, value: object) -> None:
    with _KEPT_LOCK:
        _KEPT[(board_epoch(), key)] = (
            time.monotonic() + settings.SPECBOARD_BOARD_CACHE_SECONDS,
            value,
        )
        _KEPT.move_to_end((board_epoch(), key))
        while len(_KEPT) > KEPT_READS:
            _KEPT.popitem(last=False)


def ranking_cached[T](name: str, params: dict, compute: Callable[[], T]) -> T:
    """A leaderboard read kept until one of the rankings it read changes, or the row set does.

    It is computed while `board_version.recording_rankings` notes the ranking of every row it
    reads, and kept (per row set) with the versions those rankings had (`ranking_versions`,
    with "*", every change that named no ranking). When the board's counter has moved since,
    one query compares those versions: unchanged, the read is served as it was (a run recorded
    in another ranking changes nothing here); changed, it is computed again. Reads inside it
    must be kept per row set (or not at all): `board_cached` refuses a per-version read there.

    Once per change, not once per process: the request that finds the read out of date takes
    the cache's mark for computing it (`STALE_SECONDS`), and the requests that meet the mark
    meanwhile, in any process, serve the read as it was kept instead of computing it too (it
    is out of date by the time one computation takes, as a page read before the change would
    be). A read built from such a copy is kept as out of date itself (`_STALE`), so it is
    computed again by the next request.
    """
    value, row_set = board_version()
    key = f"board:row-set-{row_set}:ranked:{name}:{_params_digest(params)}"
    kept = _kept(key)
    found = kept if kept is not _MISSING else cache.get(key, _MISSING)
    if found is not _MISSING:
        if (current := _up_to_date(key, found, value, kept=kept is not _MISSING)) is not _MISSING:
            return current
        if kept is not _MISSING:
            # This process's copy is out of date: another process may have computed it since.
            shared = cache.get(key, _MISSING)
            if (
                shared is not _MISSING
                and shared[:2] != found[:2]
                and (current := _up_to_date(key, shared, value, kept=False)) is not _MISSING
            ):
                return current
    lock = f"{key}:computing"
    computing = cache.add(lock, True, STALE_SECONDS)
    if not computing and found is not _MISSING:
        _, versions, result = found
        board_version_module.note_rankings([*versions, _STALE])
        return result
    try:
        with board_version_module.recording_rankings() as read:
            result = compute()
        # A ranking that changed after this process last read the counter may or may not be in
        # what was read: its version is noted as unknown, so the read is computed again once it
        # shows; so is one built from an out-of-date copy.
        versions = {
            ranking: -1
            if version > value or ranking in (board_version_module.UNKNOWN_RANKING, _STALE)
            else version
            for ranking, version in board_version_module.ranking_versions(read).items()
        }
        kept = (-1 if _STALE in read else value, versions, result)
        cache.set(key, kept, settings.SPECBOARD_BOARD_CACHE_SECONDS)
        _keep(key, kept)
    finally:
        if computing:
            cache.delete(lock)
    # Computed inside another ranking-scoped read: that one depends on what this one read.
    board_version_module.note_rankings(versions)
    return result


# How long a request computing a ranking-scoped read out of date holds the mark that lets the
# others serve it as it was: far longer than a page takes, and all a process that died
# computing can keep a change off the page.
STALE_SECONDS = 5
# Noted by a ranking-scoped read served out of date, so that one built from it is never kept as
# current.
_STALE = "stale"


def _up_to_date(key: str, found: tuple, value: int, *, kept: bool) -> object:
    """The kept read's result if it is current (the counter has not moved since it was kept,
    or no ranking it read has changed), else _MISSING; noted for a ranking-scoped read around
    this one. A current read found in the shared cache (`kept` False: another process computed
    it) is kept in this process too, as `board_cached` keeps its reads: served from memory
    afterwards, with no round trip and no unpickling of a page's 170 KB each request."""
    seen, versions, result = found
    if seen != value and board_version_module.ranking_versions(versions) != versions:
        return _MISSING
    if seen != value or not kept:
        _keep(key, (value, versions, result))
    # Served from where it was kept inside another ranking-scoped read: what it read is what
    # that read depends on too.
    board_version_module.note_rankings(versions)
    return result


def model_state(instance: object) -> tuple | None:
    """What a model instance holds of its own: its field values and annotations (no related
    objects, no Django state), in a stable order, as part of a `content_cached` signature."""
    if instance is None:
        return None
    return tuple(sorted((k, v) for k, v in vars(instance).items() if not k.startswith("_")))


def content_cached[T, R](
    name: str,
    items: Sequence[T],
    signature: Callable[[T], object],
    compute: Callable[[list[T]], list[R]],
) -> list[R]:
    """What each item renders to, kept under a digest of everything it is made of (`signature`:
    its rows' values, the words around them, the template) rather than under the board's
    version: after a board change a page computes again only the items whose content changed,
    and reads the others in one round trip to the cache. `compute` renders a list of items."""
    keys = [f"content:{name}:{_digest(signature(item))}" for item in items]
    return _kept_many(keys, items, compute)


def ranking_kept[T, R](
    name: str,
    items: Sequence[T],
    rankings: Callable[[T], Iterable[str]],
    compute: Callable[[list[T]], list[R]],
) -> list[R]:
    """What each item computes to, kept until one of the rankings it reads (`rankings`) changes,
    or a change names none: their versions are read in one query before anything is computed
    (a result may be newer than the versions it is kept under, never older), and only the items
    whose rankings moved are computed again. The rankings are noted for a ranking-scoped read
    around this one (`ranking_cached`), whether or not anything is computed here."""
    wanted = sorted({ranking for item in items for ranking in rankings(item)})
    board_version_module.note_rankings(wanted)
    versions = board_version_module.ranking_versions(wanted)
    every = versions[board_version_module.ANY_RANKING]
    keys = [
        f"ranking-kept:{name}:"
        + _digest((item, [(key, versions[key]) for key in sorted(rankings(item))], every))
        for item in items
    ]
    return _kept_many(keys, items, compute)


def _digest(value: object) -> str:
    """A key for what `value` holds. Its pickle, a third of its repr's cost (a page's fifty row
    signatures: 10.8 ms by repr, 3.1 ms pickled, on a loaded 2-core machine): equal values
    loaded alike pickle alike, and different values never do, so a kept rendering is found again
    and never served for other values. A value that cannot be pickled is keyed by its repr."""
    try:
        encoded = b"p" + pickle.dumps(value, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError):
        encoded = b"r" + repr(value).encode()
    return hashlib.blake2b(encoded, digest_size=20).hexdigest()


def _kept_many[T, R](
    keys: list[str], items: Sequence[T], compute: Callable[[list[T]], list[R]]
) -> list[R]:
    """Each item's value kept under its key: the kept ones read in one round trip to the cache,
    the others computed together and kept."""
    found = cache.get_many(list(dict.fromkeys(keys)))
    missing = [index for index, key in enumerate(keys) if key not in found]
    if missing:
        computed = compute([items[index] for index in missing])
        fresh = {keys[index]: value for index, value in zip(missing, computed, strict=True)}
        cache.set_many(fresh, settings.SPECBOARD_BOARD_CACHE_SECONDS)
        found |= fresh
    return [found[key] for key in keys]
