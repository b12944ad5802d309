"""The largest request body the site accepts, held at the WSGI application's door.

`WSGIRequestBodyLimit` wraps the WSGI application (leaderboard/wsgi.py) and answers 413 to a
declared body over `limit` bytes before Django sees the request (nothing is read, and no
"100 Continue" is sent); the response closes the connection. Django reads a WSGI body only up to
its declared length, so a chunked body (no length) would reach a view as empty: it is refused
with 411 (send a Content-Length) rather than read or quietly dropped. In the deployment nginx
stands in front (deploy/nginx.conf): it refuses a body past its own limit as it arrives, and
hands on a chunked body it has read whole with its length.

The limit is DATA_UPLOAD_MAX_MEMORY_SIZE, the largest body any endpoint takes (an upload); the
parsers keep their own, smaller limits for JSON and forms (leaderboard/api/parsers.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any


def refusal(status: int, detail: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and JSON body of a refusal that closes the connection."""
    body = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    return headers, body


def too_large(limit: int) -> tuple[list[tuple[bytes, bytes]], bytes]:
    return refusal(413, f"The request body is larger than {limit} bytes.")


def declared_length(value: bytes | str | None) -> int | None:
    """A Content-Length header's number, or None when there is none or it is not one."""
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None


WSGIApp = Callable[[dict, Callable[..., Any]], Iterable[bytes]]
REASONS = {411: "411 Length Required", 413: "413 Content Too Large"}


class WSGIRequestBodyLimit:
    """A WSGI application that refuses a declared body over `limit` bytes with 413, and a chunked
    body (which Django's WSGI request would not read) with 411, before the wrapped one runs."""

    def __init__(self, app: WSGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    def __call__(self, environ: dict, start_response: Callable[..., Any]) -> Iterable[bytes]:
        declared = declared_length(environ.get("CONTENT_LENGTH") or None)
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if declared is not None and declared > self.limit:
            status, (headers, body) = 413, too_large(self.limit)
        elif chunked and declared is None:
            status, (headers, body) = (
                411,
                refusal(411, "Send the request body with a Content-Length."),
            )
        else:
            return self.app(environ, start_response)
        start_response(REASONS[status], [(k.decode(), v.decode()) for k, v in headers])
        return [body]
