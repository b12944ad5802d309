"""What a board row's rendering is made of, read as plain values: the page's rows are looked up
in the content cache by these before any row is built as a model.

A board page (the API's leaderboard, the front page's ranked rows) is read in two steps. First
the page's rows as tuples of `content_columns()` (the row's own columns, its config's but the
canonical JSON its key is a digest of, its hardware's, and its baseline row's best batch): no
model instances, no related objects, one flat tuple a row, whose digest (`content_signature`)
keys the row's rendering; the front page reads its ranks, headings and baselines from them too
(`ContentRow`, `content_rows`). Then only the rows whose rendering is not kept are read as
models, with their relations (`entries_by_pk`, `read_models`), and rendered. After a run is
recorded, that is the one or two rows it changed, not the fifty a page shows: building fifty
rows and their five related objects as models was a third of a miss's time.

A signature stands for the same things as `selectors.board.entry_signature` (the row's values
but its place in its ranking, its config's and hardware's values, its evidence's batches), read
from the columns rather than from the models, so a new column is in it without anyone listing it.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from django.db.models import QuerySet
from django.db.models.query import ValuesListIterable

from leaderboard import board_version
from leaderboard.models import Config, Hardware, LeaderboardEntry
from leaderboard.selectors.board import (
    STANDING_FIELDS,
    attach_entries,
    board_rows,
    newest_release_number,
    row_places,
    with_baseline_configs,
)
from leaderboard.selectors.ranks import PageRank, page_ranks

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


def entries_by_pk(
    pks: Iterable[int], *, baseline_configs: bool = True
) -> dict[int, LeaderboardEntry]:
    """These rows as models with what a row's rendering reads of its relations (its config, its
    hardware and, with `baseline_configs`, its baseline row and that row's config: the API's
    baseline_config_key), by id; a row deleted meanwhile is absent."""
    rows = board_rows()
    if baseline_configs:
        rows = with_baseline_configs(rows)
    return {row.pk: row for row in rows.filter(pk__in=list(pks))}


class ContentRow:
    """A row read as values (`row_contents`), its columns as attributes by their value paths
    (`tokens_per_second`, `config__spec_label`): what the ranks, the headings and the baselines of
    a page read of its rows, without building them as models."""

    __slots__ = ("values",)

    def __init__(self, values: Sequence[object]) -> None:
        self.values = values

    def __getattr__(self, name: str) -> Any:  # a column's value, of its column's type
        try:
            return self.values[_positions().by_name[name]]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def pk(self) -> int:
        return content_pk(self.values)

    @property
    def is_speculative(self) -> bool:
        return self.config__spec_label != "none"

    def __repr__(self) -> str:
        return f"<ContentRow {self.pk}>"


def content_rows(
    contents: Sequence[ContentRow], *, ranks: Mapping[int, PageRank], newest: int | None
) -> list[dict]:
    """The rows a page shows (`selectors.board.leaderboard_rows`' keys) from their values, each
    with its "content" and no model yet ("entry" None): a board row kept rendered under its
    content (`templatetags.board_rows`) needs none, and the rows rendered again are read as
    models together (`read_models`)."""
    speculative = [content.is_speculative for content in contents]
    rows = row_places(contents, speculative=speculative, ranks=ranks, newest=newest)
    for row, content in zip(rows, contents, strict=True):
        row |= {"content": content, "entry": None, "evidence": None, "definitions": None}
    return rows


def read_models(rows: Sequence[dict]) -> None:
    """Rows of `content_rows` without a model are given theirs, with their relations and their
    evidence (`entries_by_pk`, `attach_entries`), read once for them all; a row deleted since
    its values were read keeps "entry" None (its page is computed again: its ranking changed)."""
    todo = [row for row in rows if row.get("entry") is None and "content" in row]
    if not todo:
        return
    # The board's table shows no baseline row's config; a legacy row's paired baseline (its
    # batch, for the evidence) is fetched for these rows at once (`board_rows`).
    found = entries_by_pk((row["content"].pk for row in todo), baseline_configs=False)
    present = [row for row in todo if row["content"].pk in found]
    attach_entries(present, [found[row["content"].pk] for row in present])


def first_contents(entries: QuerySet[LeaderboardEntry], *, limit: int) -> list[ContentRow]:
    """The first `limit` rows of a selection, read as values."""
    return [ContentRow(values) for values in row_contents(entries)[:limit]]


def ranked_rows(entries: QuerySet[LeaderboardEntry], *, limit: int) -> list[dict]:
    """The first `limit` rows of a tok/s-ordered selection (a model's, a GPU kind's), ranked,
    with staleness: read as values, as a board page's are (`content_rows`)."""
    contents = first_contents(entries, limit=limit)
    ranks = page_ranks(entries, contents, offset=0, ordering="tokens_per_second")
    return content_rows(contents, ranks=ranks, newest=newest_release_number())
