"""What a board row's rendering is made of, read as plain values: the page's rows are looked up
in the content cache by these before any row is built as a model.

A page of the API's leaderboard is read in two steps. First the page's rows as tuples of
`content_columns()` (the row's own columns, its config's but the canonical JSON its key is a
digest of, its hardware's, and its baseline row's best batch): no model instances, no related
objects, one flat tuple a row, whose digest (`content_signature`) keys the row's rendering.
Then only the rows whose rendering is not kept are read as models, with their relations
(`entries_by_pk`), and rendered. After a run is recorded, that is the one or two rows it changed,
not the fifty a page shows: building fifty rows and their five related objects as models was a
third of a miss's time.

A signature stands for the same things as `selectors.board.entry_signature` (the row's values
but its place in its ranking, its config's and hardware's values, its evidence's batches), read
from the columns rather than from the models, so a new column is in it without anyone listing it.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from django.db.models import QuerySet
from django.db.models.query import ValuesListIterable

from leaderboard import board_version
from leaderboard.models import Config, Hardware, LeaderboardEntry
from leaderboard.selectors.board import STANDING_FIELDS, board_rows, with_baseline_configs

# Its key is the digest of the canonical JSON (`runner.config`), so the key stands for it.
_CONFIG_LEFT_OUT = frozenset({"canonical"})


@functools.cache
def content_columns() -> tuple[str, ...]:
    """The value paths a row's content is read as, in a fixed order: the row's columns, then its
    config's, its hardware's and its baseline row's best batch."""
    own = [field.attname for field in LeaderboardEntry._meta.concrete_fields]
    config = [
        f"config__{field.attname}"
        for field in Config._meta.concrete_fields
        if field.attname not in _CONFIG_LEFT_OUT
    ]
    hardware = [f"hardware__{field.attname}" for field in Hardware._meta.concrete_fields]
    return (*own, *config, *hardware, "baseline_entry__best_run_id")


class _Positions(NamedTuple):
    names: str  # the columns' names as a short digest
    shown: tuple[int, ...]  # the positions a signature keeps
    by_name: dict[str, int]  # each column's position


@functools.cache
def _positions() -> _Positions:
    columns = content_columns()
    return _Positions(
        names=hashlib.blake2b("\n".join(columns).encode(), digest_size=8).hexdigest(),
        shown=tuple(index for index, name in enumerate(columns) if name not in STANDING_FIELDS),
        by_name={name: index for index, name in enumerate(columns)},
    )


class _RankingNotingValues(ValuesListIterable):
    """Rows as tuples that note their rankings as they are read, as a row read as a model does
    (`board_version`'s post_init hook): a page kept until a ranking it shows changes
    (`ranking_cached`) depends on every row it shows, not only on those it rendered again."""

    def __iter__(self):
        position = _positions().by_name["ranking_key"]
        for row in super().__iter__():
            board_version.note_rankings([row[position] or board_version.UNKNOWN_RANKING])
            yield row


def row_contents(entries: QuerySet[LeaderboardEntry]) -> QuerySet:
    """The rows of a leaderboard selection (`leaderboard_entries`, sliced or paginated later) as
    tuples of `content_columns()`, in its order, each noting its ranking when read."""
    contents = entries.values_list(*content_columns())
    contents._iterable_class = _RankingNotingValues  # kept by slicing and other clones
    return contents


def content_signature(values: Sequence[object]) -> tuple:
    """What a row's rendering is kept under: its content's values but its place in its ranking
    (STANDING_FIELDS, set on the kept rendering afterwards), with the columns' names, so that a
    migration's new column keys every row afresh."""
    positions = _positions()
    return (positions.names, tuple(values[index] for index in positions.shown))


def content_pk(values: Sequence[object]) -> int:
    """The row's id from its content's values."""
    return values[_positions().by_name["id"]]  # type: ignore[return-value]


def standing(values: Sequence[object]) -> dict[str, object]:
    """A row's place in its ranking (STANDING_FIELDS) from its content's values."""
    by_name = _positions().by_name
    return {name: values[by_name[name]] for name in STANDING_FIELDS}


def entries_by_pk(pks: Iterable[int]) -> dict[int, LeaderboardEntry]:
    """These rows as models with what a row's rendering reads of its relations (its config, its
    hardware, its baseline row and that row's config), by id; a row deleted meanwhile is
    absent."""
    rows = with_baseline_configs(board_rows()).filter(pk__in=list(pks))
    return {row.pk: row for row in rows}
