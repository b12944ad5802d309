"""CSV and JSON downloads, one way for the pages and the API alike.

A spreadsheet runs a cell that starts with "=", "+", "-", "@", a tab or a carriage return as a
formula (OWASP: CSV injection). Every CSV cell therefore passes through `neutralise`, which puts an
apostrophe before such text, so it shows as written and never runs; numbers, negative ones
included, stay numbers. `csv_response` writes rows under a header as an attachment, and
`json_response` does the same for a JSON body.

A run's downloads are megabytes (6,328 requests: 3.2 MB, half a second to a few seconds to read
and write each time), and what they show never changes once the run is recorded. `kept` renders
such a response once and keeps its bytes in the shared cache under a key the caller makes of
what the response shows (the run; for its API detail, also the few fields that pairing sets
later), so every later request costs one cache read. `throttled` holds a
download view to SPECBOARD_ANONYMOUS_EXPORT_RATE per address for visitors not signed in, the
API's own throttle (`api.throttles.AnonymousExportThrottle`, counted in the shared cache) on the
pages' views.
"""

from __future__ import annotations

import csv
import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse

from leaderboard.api.throttles import AnonymousExportThrottle

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


# How long a rendered download is kept: what it shows never changes, the bound frees the cache.
KEPT_SECONDS = 3600
# Raise it when a download's format changes, so that bodies kept in the old one are not served.
KEPT_FORMAT = 1


def kept(key: str, render: Callable[[], HttpResponse]) -> HttpResponse:
    """The response `render` makes, rendered once and kept (its bytes, type and file name) in
    the cache under `key`, which must name everything the response shows."""
    key = f"download:{KEPT_FORMAT}:{key}"
    found = cache.get(key)
    if found is None:
        response = render()
        found = (
            response["Content-Type"],
            response.headers.get("Content-Disposition"),
            response.content,
        )
        cache.set(key, found, KEPT_SECONDS)
    content_type, disposition, body = found
    response = HttpResponse(body, content_type=content_type)
    if disposition:
        response["Content-Disposition"] = disposition
    return response


def throttled(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page's download view held to SPECBOARD_ANONYMOUS_EXPORT_RATE per address for visitors
    not signed in: a 429 with Retry-After past it."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        throttle = AnonymousExportThrottle()
        if not throttle.allow_request(request, None):
            wait = math.ceil(throttle.wait() or 1)
            response = HttpResponse(
                f"Too many downloads from this address: try again in {wait} s, or sign in.",
                status=429,
                content_type="text/plain; charset=utf-8",
            )
            response["Retry-After"] = str(wait)
            return response
        return view(request, *args, **kwargs)

    return wrapped
