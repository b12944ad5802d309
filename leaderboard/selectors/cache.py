"""The read side's page cache: leaderboard reads kept until the board's rows change.

`board_cached` stores a computed read under a key made of the board's change counter (see
`leaderboard.board_version`), the read's name and a digest of its parameters, so a change to the
rows makes every cached page miss at once without anyone deleting keys. Reads that depend only on
the board's shape (row counts, filter choices) key on the counter's row_set part and survive
ordinary changes. `board_version` and `forget_board_version` are the counter's reader and memo
reset, named here for the callers that knew them as selectors.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache

from leaderboard.board_version import current as board_version
from leaderboard.board_version import forget as forget_board_version

__all__ = ["board_cache_key", "board_cached", "board_version", "forget_board_version"]

_MISSING = object()


def board_cache_key(name: str, params: dict, *, row_set_only: bool = False) -> str:
    """The cache key of a leaderboard read at the board's current version."""
    value, row_set = board_version()
    version = f"row-set-{row_set}" if row_set_only else f"{value}"
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
    return f"board:{version}:{name}:{digest[:32]}"


def board_cached[T](
    name: str, params: dict, compute: Callable[[], T], *, row_set_only: bool = False
) -> T:
    """A leaderboard read, computed once per change of the rows and kept in the cache.

    The key carries the board version, so a recorded run, a retired build or a re-ranked row
    makes every cached page miss at once; `row_set_only` reads (row counts, filter choices) miss
    only when rows come, go or leave the ranking. The timeout only bounds edits made outside the
    services.
    """
    key = board_cache_key(name, params, row_set_only=row_set_only)
    found = cache.get(key, _MISSING)
    if found is _MISSING:
        found = compute()
        cache.set(key, found, settings.SPECBOARD_BOARD_CACHE_SECONDS)
    return found
