"""Cached bodies sent compressed to the clients that accept it, compressed once, not per request.

The leaderboard's first page is large and the same for everyone until the board changes: the
API's 169 KB of JSON (every row says its definitions) and the HTML page's 440 KB at 1M runs
gzip to 12 and 19 KB. Browsers, httpx and requests ask for gzip (`Accept-Encoding`); a cached
body is compressed where it is kept (`Body`), so a compressed answer costs a request no more
than the plain one. Only bodies that hold no secret are kept this way: the API's pages and the
HTML page of a visitor who is not signed in (no form, no token), so a compressed length tells
an eavesdropper nothing a reflected query could probe for (BREACH).

Every answer from a `Body` says `Vary: Accept-Encoding`, so a shared cache between the server and
its clients keeps the two apart.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

# zlib's default: a tenth of the API page's size in 0.8 ms, once per change of the page.
LEVEL = 6


def accepts_gzip(request: HttpRequest) -> bool:
    """Whether the request's Accept-Encoding takes gzip (RFC 9110: by name or by `*`, with a
    weight above zero; `gzip;q=0` refuses it, as `*;q=0` does any coding not named)."""
    weights: dict[str, float] = {}
    for item in request.headers.get("Accept-Encoding", "").split(","):
        name, *parameters = (part.strip() for part in item.split(";"))
        weight = 1.0
        for parameter in parameters:
            key, _, value = parameter.partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if name:
            weights[name.lower()] = weight
    weight = weights.get("gzip", weights.get("x-gzip", weights.get("*", 0.0)))
    return weight > 0


@dataclass(eq=False)
class Body:
    """A response body and, once a client asked for it, its gzip (kept with it: compressed once
    per body, by whichever request first accepts it)."""

    content: bytes
    _gzipped: bytes | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def gzipped(self) -> bytes:
        with self._lock:
            if self._gzipped is None:
                self._gzipped = gzip.compress(self.content, LEVEL, mtime=0)
            return self._gzipped

    def __getstate__(self) -> dict:
        # Kept in the shared cache with its gzip, if made; the lock is per process.
        return {"content": self.content, "_gzipped": self._gzipped}

    def __setstate__(self, state: dict) -> None:
        self.content, self._gzipped = state["content"], state["_gzipped"]
        self._lock = threading.Lock()


def response(request: HttpRequest, body: Body, **kwargs: object) -> HttpResponse:
    """An HttpResponse of `body` (kwargs as HttpResponse takes them), gzipped if the request
    accepts it."""
    if accepts_gzip(request):
        answer = HttpResponse(body.gzipped(), **kwargs)  # type: ignore[arg-type]
        answer["Content-Encoding"] = "gzip"
    else:
        answer = HttpResponse(body.content, **kwargs)  # type: ignore[arg-type]
    patch_vary_headers(answer, ("Accept-Encoding",))
    return answer
