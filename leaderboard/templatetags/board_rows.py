"""`{% board_rows rows no_headings %}`: a board table's rows, each rendered once for what it shows.

Each row's HTML is kept under a digest of everything it is made of (its row's values, its
config's and hardware's, its rank and tie words, its evidence, its ranking's heading and
baseline, whether it opens the table, and the row template's own source), so a page rendered
again after the board changed renders only the rows whose content changed
(`selectors.cache.content_cached`).
"""

from __future__ import annotations

import hashlib
from functools import cache

from django import template
from django.template.loader import get_template, render_to_string
from django.utils.safestring import SafeString, mark_safe

from leaderboard.selectors.board import entry_signature
from leaderboard.selectors.cache import content_cached, model_state

register = template.Library()
ROW_TEMPLATE = "leaderboard/_board_row.html"
# Templates the row template includes: their source is part of a row's signature too.
INCLUDED = ("leaderboard/_badges.html",)


@cache
def _templates_digest() -> str:
    sources = [get_template(name).template.source for name in (ROW_TEMPLATE, *INCLUDED)]
    return hashlib.blake2b("\0".join(sources).encode(), digest_size=16).hexdigest()


def _signature(item: tuple[dict, bool], no_headings: bool) -> tuple:
    row, first = item
    entry = row["entry"]
    baseline = (row.get("baseline") or {}).get("entry")
    others = tuple(
        (key, value)
        for key, value in sorted(row.items())
        if key not in ("entry", "baseline", "legend")
    )
    return (
        _templates_digest(),
        first,
        no_headings,
        entry_signature(entry),
        others,
        model_state(baseline),
        model_state(baseline.config) if baseline is not None else None,
    )


@register.simple_tag
def board_rows(rows: list[dict], no_headings: bool = False) -> SafeString:
    items = [(row, index == 0) for index, row in enumerate(rows)]

    def render(todo: list[tuple[dict, bool]]) -> list[str]:
        return [
            render_to_string(ROW_TEMPLATE, {"row": r, "first": f, "no_headings": no_headings})
            for r, f in todo
        ]

    html = content_cached("board-row", items, lambda item: _signature(item, no_headings), render)
    return mark_safe("".join(html))
