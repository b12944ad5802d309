"""CSV and JSON downloads, one way for the pages and the API alike.

A spreadsheet runs a cell that starts with "=", "+", "-", "@", a tab or a carriage return as a
formula (OWASP: CSV injection). Every CSV cell therefore passes through `neutralise`, which puts an
apostrophe before such text, so it shows as written and never runs; numbers, negative ones
included, stay numbers. `csv_response` writes rows under a header as an attachment, and
`json_response` does the same for a JSON body.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal

from django.http import HttpResponse, JsonResponse

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: object) -> object:
    """A CSV cell a spreadsheet shows as written: text that could start a formula gets a `'`."""
    if value is None:
        return ""
    if isinstance(value, int | float | Decimal):
        return value
    if isinstance(value, list | dict):
        value = json.dumps(value)
    text = value if isinstance(value, str) else str(value)
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def csv_response(
    rows: Iterable[Mapping[str, object]], columns: Sequence[str], filename: str
) -> HttpResponse:
    """Rows as a CSV download: a header of `columns`, then one formula-safe line per row."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([neutralise(row.get(column)) for column in columns])
    return response


def json_response(body: dict, filename: str) -> JsonResponse:
    """A JSON object as a download named `filename`."""
    response = JsonResponse(body)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
