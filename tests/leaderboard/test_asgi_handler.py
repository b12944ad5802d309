"""The web server's handler (leaderboard/asgi_handler.py), called as gunicorn calls it: a request
runs in one hop on the pool (request_started, the view's queries and request_finished in one
thread), a static file streams and is closed, and a client gone before its answer loses nothing.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter

import pytest
from django.core import signals
from django.db.backends.signals import connection_created

from leaderboard.asgi_handler import REFUSAL_DELAY_SECONDS, PooledASGIHandler

pytestmark = pytest.mark.django_db(transaction=True)


def http_scope(path: str) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


def serve(application, path: str, *, client_leaves: bool = False) -> list[dict]:
    """The ASGI messages the handler sends for one GET of `path`."""
    sent: list[dict] = []

    async def run() -> None:
        incoming = [{"type": "http.request", "body": b"", "more_body": False}]
        if client_leaves:
            incoming.append({"type": "http.disconnect"})
        stays = asyncio.Event()

        async def receive() -> dict:
            if incoming:
                return incoming.pop(0)
            await stays.wait()  # a client that stays sends nothing more
            raise AssertionError("unreachable")

        async def send(message: dict) -> None:
            sent.append(message)

        await application(http_scope(path), receive, send)

    asyncio.run(run())
    return sent


@pytest.fixture
def application():
    handler = PooledASGIHandler(threads=2)
    yield handler
    handler.pool.shutdown(wait=True)


@pytest.fixture
def seen():
    """(what happened, in which thread) for each request signal and new database connection."""
    events: list[tuple[str, str]] = []

    def recorder(name: str):
        def record(**kwargs) -> None:
            events.append((name, threading.current_thread().name))

        return record

    receivers = {
        signals.request_started: recorder("started"),
        connection_created: recorder("connected"),
        signals.request_finished: recorder("finished"),
    }
    for signal, receiver in receivers.items():
        signal.connect(receiver, weak=False)
    yield events
    for signal, receiver in receivers.items():
        signal.disconnect(receiver)


def test_a_request_runs_in_one_hop_on_the_pool(application, seen, hardware, monkeypatch):
    submitted = Counter()
    submit = application.pool.submit

    def counted(*args, **kwargs):
        submitted["calls"] += 1
        return submit(*args, **kwargs)

    monkeypatch.setattr(application.pool, "submit", counted)
    seen.clear()  # the test's own connection (set up with the fixtures) is not the request's
    messages = serve(application, "/api/v1/hardware")

    assert messages[0]["status"] == 200
    assert hardware.slug.encode() in b"".join(m.get("body", b"") for m in messages[1:])
    assert submitted["calls"] == 1
    names = {name for name, _ in seen}
    assert {"started", "connected", "finished"} <= names
    threads = {thread for _, thread in seen}
    assert len(threads) == 1 and threads.pop().startswith("specboard-web")


def test_a_refusal_is_answered_after_a_pause_and_other_answers_at_once(application, settings):
    settings.SPECBOARD_ANONYMOUS_EXPORT_RATE = "1/hour"
    assert serve(application, "/api/v1/hardware")[0]["status"] == 200  # the first request's setup

    def answered(path: str) -> tuple[int, float]:
        started = time.monotonic()
        status = serve(application, path)[0]["status"]
        return status, time.monotonic() - started

    first, at_once = answered("/runs/999999/requests.csv")
    refused, paused = answered("/runs/999999/requests.csv")

    assert (first, refused) == (404, 429)
    assert paused >= REFUSAL_DELAY_SECONDS > at_once


def test_the_middleware_chain_runs_in_sync_mode(application):
    assert not asyncio.iscoroutinefunction(application._middleware_chain)


def test_a_static_file_streams_and_is_closed_after_it_is_sent(application, seen):
    messages = serve(application, "/static/leaderboard/site.css")

    assert messages[0]["status"] == 200
    body = b"".join(m.get("body", b"") for m in messages[1:])
    assert b"{" in body and messages[-1].get("more_body", False) is False
    assert [name for name, _ in seen if name == "finished"] == ["finished"]


def test_a_client_gone_before_its_answer_ends_the_request_cleanly(application, seen):
    messages = serve(application, "/api/v1/leaderboard", client_leaves=True)

    # Nothing raised; the request was finished (its connection released) whether or not any
    # of the answer went out before the disconnect was seen.
    assert [name for name, _ in seen if name == "finished"] == ["finished"]
    assert all(m["type"].startswith("http.response") for m in messages)


def test_other_connection_types_are_refused_as_django_refuses_them(application):
    async def run() -> None:
        async def receive() -> dict:
            return {"type": "lifespan.startup"}

        async def send(message: dict) -> None:
            raise AssertionError("nothing is sent")

        await application({"type": "lifespan"}, receive, send)

    with pytest.raises(ValueError, match="HTTP connections only"):
        asyncio.run(run())


def test_a_pool_needs_a_thread():
    with pytest.raises(ValueError):
        PooledASGIHandler(threads=0)


def test_a_thread_keeps_its_cache_backend_and_so_its_redis_pool_between_requests():
    """Django keeps cache backends per context: run in a copy of the event loop's context, each
    request built a new backend, and on Redis a new connection (13% of a cached page's time)."""
    from django.core.cache import caches

    handler = PooledASGIHandler(threads=1)
    backends: list[int] = []

    def record(**kwargs) -> None:
        backends.append(id(caches["default"]))

    signals.request_started.connect(record, weak=False)
    try:
        for _ in range(3):
            assert serve(handler, "/api/v1/leaderboard")[0]["status"] == 200
    finally:
        signals.request_started.disconnect(record)
        handler.pool.shutdown(wait=True)
    assert len(backends) == 3 and len(set(backends)) == 1
