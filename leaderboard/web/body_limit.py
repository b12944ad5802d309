"""The largest request body the site accepts, held at the server's door, for ASGI and WSGI alike.

Django's ASGI handler reads a whole request body (spooled to a temporary file past
FILE_UPLOAD_MAX_MEMORY_SIZE) before its own limits, its middleware and authentication run: an
anonymous 2 GiB POST was spooled to disk before its 401. `RequestBodyLimit` wraps the ASGI
application (leaderboard/asgi.py) and answers 413 to a body over `limit` bytes before Django sees
the request: at once for a declared Content-Length over it (nothing is read, and no
"100 Continue" is sent), and for a chunked body as soon as the bytes read pass it. The response
closes the connection, so the rest of the body is never read.

`WSGIRequestBodyLimit` does the same for the WSGI application (leaderboard/wsgi.py). Django reads
a WSGI body only up to its declared length, so a chunked body (no length) would reach a view as
empty: it is refused with 411 (send a Content-Length) rather than read or quietly dropped.

The limit is DATA_UPLOAD_MAX_MEMORY_SIZE, the largest body any endpoint takes (an upload); the
parsers keep their own, smaller limits for JSON and forms (leaderboard/api/parsers.py).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


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


class BodyTooLarge(Exception):
    """The body read so far has passed the limit."""


class RequestBodyLimit:
    """An ASGI application that refuses a request body over `limit` bytes with 413 before the
    wrapped application reads past it (declared, or counted as a chunked body arrives)."""

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = declared_length(headers.get(b"content-length"))
        if declared is not None and declared > self.limit:
            await self.refuse(send)
            return
        received = 0

        async def receive_within_limit() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge
            return message

        try:
            await self.app(scope, receive_within_limit, send)
        except BodyTooLarge:
            # Django reads the whole body before it answers: nothing has been sent yet.
            await self.refuse(send)

    async def refuse(self, send: Send) -> None:
        headers, body = too_large(self.limit)
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


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
