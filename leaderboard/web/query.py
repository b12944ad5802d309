"""Numbers in a query string as the pages and the API read them: ASCII digits, a bounded length.

`str.isdigit` is true for "²" and "٣", which `int` then refuses or reads as another number; a
page number or a level is only ever plain digits, and anything else is treated as absent.
"""

from __future__ import annotations


def whole_number(text: str | None, *, max_digits: int = 6) -> int | None:
    """The non-negative integer that `text` spells in ASCII digits, else None."""
    if not text or len(text) > max_digits or not (text.isascii() and text.isdigit()):
        return None
    return int(text)
