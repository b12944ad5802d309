"""Gunicorn's settings for the web server: compose, the Dockerfile and the benches use them.

Asyncio workers (gunicorn's own ASGI worker, serving leaderboard.asgi): an idle or slow client's
connection waits in the event loop until its whole request has arrived, so half-open connections
can no longer hold the workers (three sync workers froze for 10 s on four of them; threaded
workers hand each new connection to a thread at once, so 4 threads froze on 64 idle ones).
Django runs each request's view in a thread of its own, so a slow page holds no other request
of its process; but they share that process's interpreter lock, so the number of processes
sets how much CPU work runs side by side: by default two per CPU the server may use, plus one
(gunicorn's advice), WEB_WORKERS to choose. The pages keep their own cost bounded (cached per
board version, a hundred rows a page: docs/PERFORMANCE.md, page load). And the server refuses
to start several processes on a per-process cache outside DEBUG: the API's throttles and the
board's page cache would then count and cache per process.
"""

from __future__ import annotations

import os


def default_workers() -> int:
    """Two web processes for each CPU this server may run on, plus one."""
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return 2 * (len(usable) if usable else os.cpu_count() or 1) + 1


bind = os.environ.get("SPECBOARD_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_WORKERS") or default_workers())
worker_class = "asgi"
# Idle keep-alive connections are closed after this many seconds; requests time out after 60.
keepalive = 5
timeout = 60
accesslog = "-"


def per_process_cache_problem(*, workers: int) -> str | None:
    """Why these settings cannot serve from several processes, or None."""
    from django.conf import settings

    backend = settings.CACHES["default"]["BACKEND"]
    if workers > 1 and not settings.DEBUG and backend.endswith("LocMemCache"):
        return (
            f"{workers} web processes on a per-process cache ({backend}): throttles and cached "
            "pages would count per process; set CACHE_URL to the shared Redis, or WEB_WORKERS=1"
        )
    return None


def on_starting(server) -> None:
    """Refuse a multi-process server on a per-process cache before any worker starts."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    # Each request runs in a thread of its own (see above), so a database connection kept for
    # reuse is never reused: it stays open with its dead thread, and 8 clients took PostgreSQL
    # past its 100 connections in a minute. The web processes (forked from this one, after the
    # settings are read here) close theirs after every request; Celery workers keep theirs.
    os.environ["DATABASE_CONN_MAX_AGE"] = "0"
    django.setup()
    if problem := per_process_cache_problem(workers=server.cfg.workers):
        raise SystemExit(f"specboard: refusing to start: {problem}")
