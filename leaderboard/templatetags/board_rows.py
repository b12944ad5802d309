"""`{% board_rows rows no_headings %}`: a board table's rows, each rendered once for what it shows.

Each row's HTML is kept under a digest of everything it is made of (its row's values, its
config's and hardware's, its evidence, its ranking's heading and baseline, whether it opens the
table, and the row templates' own source), so a page rendered again after the board changed
renders only the rows whose content changed (`selectors.cache.content_cached`). Its place in its
ranking (rank and tie words) is rendered apart and put in afterwards: a run recorded in a ranking
moves the rank of every row it passes, and none of those is rendered again for it.
"""

from __future__ import annotations

import hashlib
from functools import cache, lru_cache

from django import template
from django.template.loader import get_template, render_to_string
from django.utils.safestring import SafeString, mark_safe

from leaderboard.selectors.board import STANDING_FIELDS, entry_signature, read_evidence
from leaderboard.selectors.cache import content_cached, model_state
from leaderboard.selectors.row_content import content_signature, read_models

register = template.Library()
ROW_TEMPLATE = "leaderboard/_board_row.html"
STANDING_TEMPLATE = "leaderboard/_board_row_standing.html"
# Templates the row template includes: their source is part of a row's signature too.
INCLUDED = ("leaderboard/_badges.html",)
# The row's values that are its place in its ranking, rendered by STANDING_TEMPLATE.
STANDING_KEYS = (*STANDING_FIELDS, "tied")
# Where the row template leaves them, in the HTML that is kept (NUL never comes out of a
# template: autoescaped text cannot hold it).
PIECES = ("tied_class", "rank_cell", "tie_badge")
MARKERS = {piece: f"\0{piece}\0" for piece in PIECES}


@cache
def _templates_digest() -> str:
    names = (ROW_TEMPLATE, STANDING_TEMPLATE, *INCLUDED)
    sources = [get_template(name).template.source for name in names]
    return hashlib.blake2b("\0".join(sources).encode(), digest_size=16).hexdigest()


@lru_cache(maxsize=512)
def _standing_pieces(standing: tuple, unranked: str, speculative: bool) -> dict[str, str]:
    """A row's class, rank cell and tie badge for its place in its ranking (a few hundred
    places cover every page)."""
    row = dict(zip(STANDING_KEYS, standing, strict=True)) | {"unranked": unranked}
    html = render_to_string(STANDING_TEMPLATE, {"row": row, "speculative": speculative})
    return dict(zip(PIECES, html.rstrip("\n").split("<!--piece-->"), strict=True))


def _with_standing(html: str, row: dict) -> str:
    pieces = _standing_pieces(
        tuple(row[key] for key in STANDING_KEYS), row["unranked"], row["speculative"]
    )
    for piece, marker in MARKERS.items():
        html = html.replace(marker, pieces[piece])
    return html


# A row's keys that its signature reads apart, or not at all: its model or its values (which
# `entry_signature` or `content_signature` stand for, its evidence's batches among them), its
# baseline (by its values) and its place in its ranking (rendered apart).
_KEYS_APART = ("entry", "content", "baseline", "legend", "evidence", "definitions", *STANDING_KEYS)


def _signature(item: tuple[dict, bool], no_headings: bool) -> tuple:
    row, first = item
    content = row.get("content")
    own = (
        entry_signature(row["entry"], standing=False)
        if content is None
        else content_signature(content.values)
    )
    baseline = (row.get("baseline") or {}).get("entry")
    others = tuple((key, value) for key, value in sorted(row.items()) if key not in _KEYS_APART)
    return (
        _templates_digest(),
        first,
        no_headings,
        own,
        others,
        model_state(baseline),
        model_state(baseline.config) if baseline is not None else None,
    )


@register.simple_tag
def board_rows(rows: list[dict], no_headings: bool = False) -> SafeString:
    items = [(row, index == 0) for index, row in enumerate(rows)]

    def render(todo: list[tuple[dict, bool]]) -> list[str]:
        # Rows read as values are read as models here, the ones rendered again alone; a row
        # deleted since renders nothing (its ranking changed, so its page is computed again).
        read_models([row for row, _ in todo])
        read_evidence([row for row, _ in todo])
        context = {"no_headings": no_headings, "standing": MARKERS}
        return [
            render_to_string(ROW_TEMPLATE, context | {"row": r, "first": f})
            if r["entry"] is not None
            else ""
            for r, f in todo
        ]

    html = content_cached("board-row", items, lambda item: _signature(item, no_headings), render)
    return mark_safe(
        "".join(_with_standing(h, row) for h, (row, _) in zip(html, items, strict=True))
    )
