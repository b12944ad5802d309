"""The site's one cache: whole responses for visitors not signed in, kept until a ranking they
show changes.

A view wrapped in `cached_page` names the query parameters it reads (`params`) and says what its
response shows with `shows()`: the rankings whose rows it read (None: it may show anything on
the board). The response is kept in Django's cache (`CACHES["pages"]`: each web process's memory,
bounded) under its path, those parameters and whether it went gzipped, with the versions its
rankings had (`board_version`): a later request compares them with the current ones (read in
one query, at most once per SPECBOARD_BOARD_VERSION_SECONDS in a process) and serves it as it
was while none moved. A run recorded in a ranking the page shows moves that version in the
transaction that records it, so the page is computed again: by a thread behind the request
that finds it out of date, which is served it as it was, like every request until the thread
is done (SPECBOARD_PAGES_REFRESH_BEHIND; off, that request computes it). Where the web processes
share a cache (Redis), the one that computed a page leaves a copy there, which the others take
when theirs is out of date: one process computes each version of a page. One recorded elsewhere
leaves it kept. A row count is kept the same way until rows come or go
(`kept_while_row_set_holds`). Parameters the view does not read are no part of the key, and a
value the page does not hold is not kept (`shows(kept=False)`), so made-up parameters and values
cannot fill the cache.

Each kept response carries an ETag (answered with 304 to a matching If-None-Match), a
Cache-Control that lets a shared cache keep it but revalidate, and a Surrogate-Key header that
names its rankings, so a proxy in front can take over (PyPI's warehouse: `origin_cache`). Kept
bodies hold no secret (no form, no token, no user), so only they are gzipped (by Django's
`GZipMiddleware`, once per version): a compressed length leaks nothing a reflected query could
probe for (BREACH). A signed-in visitor, or one with a message waiting, gets the page computed
for them, uncompressed and marked private.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from django.conf import settings
from django.contrib.messages import get_messages
from django.core.cache import BaseCache, caches
from django.core.cache.backends.locmem import LocMemCache
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseBase, QueryDict
from django.template.response import SimpleTemplateResponse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from django.views.decorators.gzip import gzip_page

from leaderboard.web import board_version
from leaderboard.web.board_version import ANY_RANKING, EVERY_CHANGE, ROW_SET

logger = logging.getLogger(__name__)
# The cache the pages are kept in (settings.CACHES): each web process's own memory.
PAGES = "pages"
# The longest a request may take to compute a page again while the others are served the one
# kept: far longer than a page takes, and all a process that died computing can delay it.
COMPUTE_SECONDS = 10
# GZipMiddleware's own test of Accept-Encoding: a request that passes it gets the gzipped body.
_ACCEPTS_GZIP = re.compile(r"\bgzip\b")


@dataclass(frozen=True)
class Shown:
    """What a response shows (see `shows`)."""

    rankings: frozenset[str] | None
    kept: bool


@dataclass(frozen=True)
class Kept:
    """A kept response: the versions it was computed at, its status, headers and body."""

    versions: dict[str, int]
    etag: str
    status: int
    headers: tuple[tuple[str, str], ...]
    content: bytes


type Params = Callable[[QueryDict], Mapping[str, object] | None]


def shows[R: HttpResponseBase](
    response: R, *, rankings: Iterable[str] | None, kept: bool = True
) -> R:
    """Say what `response` shows: the rankings whose rows it read (None: anything on the board);
    `kept` False where the query named something the page does not hold (an unknown filter
    value, a page number past the last), so that made-up values are not kept."""
    response.shown = Shown(  # type: ignore[attr-defined]
        rankings=None if rankings is None else frozenset(rankings), kept=kept
    )
    return response


def no_params(query: QueryDict) -> dict[str, object]:
    """The parameters of a page that reads none: every query asks for the same page."""
    return {}


def cached_page(
    params: Params = no_params,
) -> Callable[[Callable[..., HttpResponseBase]], Callable[..., HttpResponseBase]]:
    """Serve the view's response from the cache while the rankings it shows are unchanged.

    `params` reads what the view reads of the query, spelled one way (a page number without
    its leading zeros, no empty filter), with nothing else; None where the page is not to be
    kept at all (a free-text search). The response is looked up under those parameters, so any
    spelling of a page finds it, and kept only from a request that spelled them so (its links
    and the sign-in link name the request's own address)."""

    def decorator(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
        gzipped_view = gzip_page(view)

        @functools.wraps(view)
        def cached(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponseBase:
            asked = params(request.GET) if _anonymous(request) else None
            if asked is None:
                response = view(request, *args, **kwargs)
                patch_cache_control(response, private=True)
                return response
            wanted = _pairs(asked.items())
            gzipped = bool(_ACCEPTS_GZIP.search(request.headers.get("Accept-Encoding", "")))
            compute = gzipped_view if gzipped else view
            key = _key(request.path, wanted, gzipped)
            kept = caches[PAGES].get(key)
            if kept is not None and _versions(kept.versions) == kept.versions:
                return _answer(request, kept)
            if _pairs(request.GET.lists()) != wanted:
                # Never kept from a request that spelled its parameters otherwise: its links
                # and the sign-in link would name what it made up.
                return compute(request, *args, **kwargs)
            computing = f"{key}:computing"
            if kept is not None and _marks().get(computing):
                return _answer(request, kept)  # being computed: served as it was meanwhile
            found = _shared_copy(key)
            if found is not None and _versions(found.versions) == found.versions:
                # Another web process computed it at the current versions: taken as it is.
                caches[PAGES].set(key, found, settings.SPECBOARD_BOARD_CACHE_SECONDS)
                return _answer(request, found)
            kept = kept or found
            if kept is None:
                return _computed(compute, request, args, kwargs, key)
            # Out of date: one thread of one process computes it again; the requests that come
            # meanwhile are served it as it was (as they would have been a computation earlier),
            # not each computing it too; with SPECBOARD_PAGES_REFRESH_BEHIND, this one too.
            if not _marks().add(computing, True, COMPUTE_SECONDS):
                return _answer(request, kept)
            if settings.SPECBOARD_PAGES_REFRESH_BEHIND:
                refresh = functools.partial(_refresh, compute, request, args, kwargs, key)
                threading.Thread(target=refresh, name=f"page {request.path}", daemon=True).start()
                return _answer(request, kept)
            try:
                return _computed(compute, request, args, kwargs, key)
            finally:
                _marks().delete(computing)

        return cached

    return decorator


def _refresh(
    view: Callable[..., HttpResponseBase], request: HttpRequest, args: tuple, kwargs: dict, key: str
) -> None:
    """Compute a kept page again behind the request that found it out of date, on this thread's
    own database connection, closed after."""
    try:
        _computed(view, request, args, kwargs, key)
    except Exception:
        logger.exception("computing %s again failed; the page kept is served", request.path)
    finally:
        _marks().delete(f"{key}:computing")
        connection.close()


def _shared() -> BaseCache | None:
    """The cache every web process shares (Redis, where several serve), or None where Django's
    default cache is this process's own memory."""
    default = caches["default"]
    return None if isinstance(default, LocMemCache) else default


def _shared_copy(key: str) -> Kept | None:
    """The page as the last process that computed it left it in the shared cache, if any: a
    process whose own copy is out of date takes it rather than computing it too."""
    shared = _shared()
    return shared.get(key) if shared is not None else None


def _marks() -> BaseCache:
    """Where the mark of a page being computed is kept: shared by every process where they share
    a cache, so one process computes it."""
    return _shared() or caches[PAGES]


def _versions(keys: Iterable[str]) -> dict[str, int]:
    """The versions of these keys as this process last read them, read again at most once per
    SPECBOARD_BOARD_VERSION_SECONDS: a kept page's check costs no query within it."""
    seconds = settings.SPECBOARD_BOARD_VERSION_SECONDS
    if seconds <= 0:
        return board_version.versions(keys)
    wanted = sorted(keys)
    memo = "versions:" + hashlib.blake2b(repr(wanted).encode(), digest_size=16).hexdigest()
    found = caches[PAGES].get(memo)
    if found is None:
        found = board_version.versions(wanted)
        caches[PAGES].set(memo, found, seconds)
    return found


def _computed(
    view: Callable[..., HttpResponseBase], request: HttpRequest, args: tuple, kwargs: dict, key: str
) -> HttpResponseBase:
    """The view's response, kept under `key` where it says what it shows and the request spelled
    the parameters it reads one way."""
    # Read before the page: a change made while it is computed leaves it out of date.
    before = board_version.current()
    response = view(request, *args, **kwargs)
    shown = getattr(response, "shown", None)
    if shown is None or response.status_code != 200 or response.cookies:
        return response
    if isinstance(response, SimpleTemplateResponse):
        response = response.render()  # a DRF or template response, rendered to keep
    # A response that says what it shows is a page with its whole body, never a stream.
    response = cast(HttpResponse, response)
    kept = Kept(
        versions=board_version.versions(_depends_on(shown.rankings)),
        etag='"' + hashlib.blake2b(response.content, digest_size=16).hexdigest() + '"',
        status=response.status_code,
        headers=tuple(response.headers.items()),
        content=response.content,
    )
    if shown.kept and max(kept.versions.values()) <= before:
        caches[PAGES].set(key, kept, settings.SPECBOARD_BOARD_CACHE_SECONDS)
        if (shared := _shared()) is not None:
            shared.set(key, kept, settings.SPECBOARD_BOARD_CACHE_SECONDS)
    return _answer(request, kept)


def kept_while_row_set_holds[T](name: Hashable, compute: Callable[[], T]) -> T:
    """A value read from the board (a selection's row count) under `name`, kept until rows come
    to the board or go (`ROW_SET`): a run recorded in a row it has changes none. A page that
    counts its rows then reads the count once per row set, not on every miss (130 ms at 200,000
    rows)."""
    version = _versions([ROW_SET])[ROW_SET]
    key = "kept:" + hashlib.blake2b(repr((name, version)).encode(), digest_size=16).hexdigest()
    found = caches[PAGES].get(key)
    if found is None:
        found = compute()
        caches[PAGES].set(key, found, settings.SPECBOARD_BOARD_CACHE_SECONDS)
    return found


def _anonymous(request: HttpRequest) -> bool:
    """Whether the request gets the body every visitor not signed in gets."""
    return (
        request.method in ("GET", "HEAD")
        and not request.user.is_authenticated
        and "Authorization" not in request.headers
        and not len(get_messages(request))
    )


def _pairs(items: Iterable[tuple[str, object]]) -> tuple[tuple[str, str], ...] | None:
    """Parameters as sorted (name, value) pairs; None where a name is given twice."""
    pairs = []
    for name, value in items:
        if isinstance(value, list):
            if len(value) != 1:
                return None
            value = value[0]
        pairs.append((name, str(value)))
    return tuple(sorted(pairs))


def _key(path: str, query: tuple | None, gzipped: bool) -> str:
    digest = hashlib.blake2b(repr((path, query, gzipped)).encode(), digest_size=16).hexdigest()
    return f"page:{digest}"


def _depends_on(rankings: frozenset[str] | None) -> set[str]:
    if rankings is None:
        return {EVERY_CHANGE}
    return set(rankings) | {ANY_RANKING, ROW_SET}


def _answer(request: HttpRequest, kept: Kept) -> HttpResponseBase:
    """The kept response, or a 304 where the client holds it already."""
    response = HttpResponse(kept.content, status=kept.status)
    for name, value in kept.headers:
        response[name] = value
    response["ETag"] = kept.etag
    response["Surrogate-Key"] = " ".join(sorted(kept.versions))
    patch_cache_control(response, public=True, max_age=0, must_revalidate=True)
    patch_vary_headers(response, ("Cookie", "Accept-Encoding"))
    # Given a response, it answers one (that one or a 304); the stubs allow None.
    return get_conditional_response(request, etag=kept.etag, response=response)  # type: ignore[return-value]
