"""Reading a rendered page as a person reads it: its text, the JSON its charts embed, an element's
text by id, and the board's tables row by row (or each row's rank and label alone); and whether any answer, page or JSON, answered
well (below 500, its JSON parsing)."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

# Elements that never have an end tag: they open no level of nesting.
_VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "wbr",
}


# Query strings no page or endpoint expects: NUL characters, paths, repeats, numbers too large
# or not numbers, other scripts, lengths past any column.
ODD_QUERIES = [
    "target=%00",
    "hardware=../x",
    "hardware=%00",
    "target=a&target=b&target=%00&hardware=x&hardware=%00",
    "from=%00",
    "from=abc%00def",
    "from=" + "a" * 70,
    "preset=%00",
    "preset=../x",
    "page=%00",
    "page=-1",
    "page=99999999999999999999",
    "format=%00",
    "hardware=%F0%9F%99%82",
    "target=" + "x" * 5000,
]


def answers_well(response) -> bool:
    """Below 500, and JSON that parses wherever JSON is what it says it is."""
    if response.status_code >= 500:
        return False
    if "json" in response.get("Content-Type", ""):
        json.loads(response.content)
    return True


def text(response) -> str:
    """A page that answered 200, entities decoded and every run of whitespace one space."""
    assert response.status_code == 200, response.status_code
    return re.sub(r"\s+", " ", html.unescape(response.content.decode()))


def embedded(page: str, element_id: str):
    """The JSON a page embeds for its charts (`json_script`) under this id, or None."""
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    return json.loads(found.group(1)) if found else None


class _ElementText(HTMLParser):
    def __init__(self, element_id: str) -> None:
        super().__init__()
        self.element_id = element_id
        self.depth = 0  # levels open inside the element; 0 before it starts and after it ends
        self.found = False
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth:
            self.depth += tag not in _VOID
        elif not self.found and dict(attrs).get("id") == self.element_id:
            self.found = True
            self.depth = 0 if tag in _VOID else 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(data)


def element_text(page: str, element_id: str) -> str | None:
    """The text inside the element with this id, tags left out and whitespace collapsed; None
    when the page has no such element."""
    parser = _ElementText(element_id)
    parser.feed(page)
    if not parser.found:
        return None
    return re.sub(r"\s+", " ", "".join(parser.parts)).strip()


class _ClassTexts(HTMLParser):
    """The text of every element of one class (not nested in another of it)."""

    def __init__(self, class_name: str) -> None:
        super().__init__()
        self.class_name = class_name
        self.depth = 0
        self.texts: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth:
            self.depth += tag not in _VOID
        elif self.class_name in (dict(attrs).get("class") or "").split() and tag not in _VOID:
            self.depth = 1
            self.texts.append([])

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.texts[-1].append(data)


def class_texts(page: str, class_name: str) -> list[str]:
    """The text inside each element of this class, tags left out and whitespace collapsed."""
    parser = _ClassTexts(class_name)
    parser.feed(page)
    return [re.sub(r"\s+", " ", "".join(parts)).strip() for parts in parser.texts]


def table_html(page: str, table_id: str) -> str:
    """The inside of the board table with this id ("" when the page has none)."""
    found = re.search(rf'<table class="board" id="{table_id}">(.*?)</table>', page)
    return found.group(1) if found else ""


def board_rows(page: str, table_id: str = "ranking") -> list[dict]:
    """Each row of a board table in page order: its rank ("–" or "base" without one), the
    label under the rank, the heading of the ranking it is under, and its config's label."""
    rows, heading = [], ""
    for cells in re.findall(r"<tr[^>]*>(.*?)</tr>", table_html(page, table_id)):
        if found := re.match(r' ?<th colspan="10" scope="colgroup">([^<]+)</th>', cells):
            heading = found.group(1)
            continue
        rank = re.search(r'<td class="rank">(.*?)</td>', cells)
        label = re.search(r'<td><a href="/configs/[0-9a-f]+/">([^<]+)</a>', cells)
        if not (rank and label):
            continue
        number = re.match(r"(\d+)", rank.group(1))
        words = re.search(r'class="sub rank-label [^"]*"[^>]*>([^<]+)<', rank.group(1))
        rows.append(
            {
                "rank": number.group(1) if number else re.sub(r"<[^>]+>", "", rank.group(1)),
                "label": words.group(1) if words else "",
                "heading": heading,
                "config": label.group(1),
                "html": cells,
            }
        )
    return rows


def n_max_of(label: str) -> int | str:
    """A config label's n_max (the label itself where it has none: a baseline)."""
    found = re.search(r"n_max (\d+)", label)
    return int(found.group(1)) if found else label


def ranking(page: str, table_id: str = "ranking") -> list[tuple[str, str, str]]:
    """(rank or "–", the heading of the ranking it is under, config label) for each row of a
    board table, in page order."""
    table = re.search(rf'<table class="board" id="{table_id}">(.*?)</table>', page).group(1)
    shown, heading = [], ""
    for cells in re.findall(r"<tr[^>]*>(.*?)</tr>", table):
        if found := re.match(r' ?<th colspan="10" scope="colgroup">([^<]+)</th>', cells):
            heading = found.group(1)
            continue
        rank = re.search(r'<td class="rank">(.*?)</td>', cells)
        label = re.search(r'<td><a href="/configs/[0-9a-f]+/">([^<]+)</a>', cells)
        if rank and label:
            number = re.match(r"(\d+)", rank.group(1))
            shown.append((number.group(1) if number else "–", heading, label.group(1)))
    return shown


def rank_labels(page: str) -> dict[str, str]:
    """Each ranked row's label under its rank ("≈ leader", "≈ row above", "no interval", or "")."""
    table = re.search(r'<table class="board" id="ranking">(.*?)</table>', page).group(1)
    labels = {}
    for cells in re.findall(r"<tr[^>]*>(.*?)</tr>", table):
        rank = re.search(r'<td class="rank">(.*?)</td>', cells)
        label = re.search(r'<td><a href="/configs/[0-9a-f]+/">([^<]+)</a>', cells)
        if rank and label:
            words = re.search(r'class="sub rank-label [^"]*"[^>]*>([^<]+)<', rank.group(1))
            labels[label.group(1)] = words.group(1) if words else ""
    return labels
