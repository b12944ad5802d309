"""Gunicorn's settings for the web server: compose, the Dockerfile and the benches use them
(`gunicorn -c python:leaderboard.web.gunicorn_conf`).

Gunicorn's own threaded workers on leaderboard.wsgi: each process waits for new and kept-alive
connections in one poller and serves the requests that arrive on WEB_THREADS threads, each of
which keeps its database connection (DATABASE_CONN_MAX_AGE). The threads share their process's
interpreter lock, so the number of processes sets how much CPU work runs side by side: by default
two per CPU the server may use, plus one (gunicorn's advice), WEB_WORKERS to choose. The server
refuses to start several processes on a per-process cache outside DEBUG (the API's throttles and
the page cache would then count and cache per process), and more threads than PostgreSQL has
connections for.

A new connection holds a thread for up to 5 s while its request arrives (gunicorn's own rule), so
the deployment puts nginx in front (deploy/nginx.conf, on the Unix socket SPECBOARD_BIND names):
idle and slow clients wait there, and gunicorn sees whole requests.
"""

from __future__ import annotations

import os
from typing import cast


def default_workers() -> int:
    """Two web processes for each CPU this server may run on, plus one."""
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return 2 * (len(usable) if usable else os.cpu_count() or 1) + 1


bind = os.environ.get("SPECBOARD_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_WORKERS") or default_workers())
wsgi_app = "leaderboard.wsgi:application"
worker_class = "gthread"
# A refused download waits a second on its thread (api.throttles.AnonymousExportThrottle).
threads = int(os.environ.get("WEB_THREADS") or 8)
# On TCP each process listens on a socket of its own (SO_REUSEPORT), and the kernel spreads new
# connections over them, so kept-alive connections do not bunch on the first process to wake. A
# Unix socket (behind the proxy: deploy/nginx.conf) is one socket the processes share.
reuse_port = not bind.startswith("unix:")
# Idle keep-alive connections are closed after this many seconds; requests time out after 60.
keepalive = 5
timeout = 60
accesslog = "-"


def per_process_cache_problem(*, workers: int) -> str | None:
    """Why these settings cannot serve from several processes, or None."""
    from django.conf import settings

    backend = cast(str, settings.CACHES["default"]["BACKEND"])  # the plugin types all its values
    if workers > 1 and not settings.DEBUG and backend.endswith("LocMemCache"):
        return (
            f"{workers} web processes on a per-process cache ({backend}): throttles and cached "
            "pages would count per process; set CACHE_URL to the shared Redis, or WEB_WORKERS=1"
        )
    return None


# Connections PostgreSQL keeps for the others: Celery's workers and beat, migrations, an admin.
RESERVED_CONNECTIONS = 20


def connection_budget_problem(*, workers: int, threads: int, max_connections: int) -> str | None:
    """Why the web processes could hold more connections than the database allows, or None."""
    held = workers * threads
    if held > max_connections - RESERVED_CONNECTIONS:
        return (
            f"{workers} web processes x {threads} threads could hold {held} database connections; "
            f"PostgreSQL allows {max_connections}, {RESERVED_CONNECTIONS} of them kept for the "
            "workers: lower WEB_WORKERS or WEB_THREADS, or set DATABASE_CONN_MAX_AGE=0"
        )
    return None


def database_max_connections() -> int | None:
    """PostgreSQL's max_connections, or None for another database or none that answers."""
    from django.db import DatabaseError, connection

    if connection.vendor != "postgresql":
        return None
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW max_connections")
            return int(cursor.fetchone()[0])
    except DatabaseError:
        return None  # not up yet: the requests will say so
    finally:
        connection.close()  # the workers are forked from this process: they open their own


def on_starting(server) -> None:
    """Refuse a server that would share out a per-process cache, or more database connections
    than there are, before any worker starts."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    django.setup()
    from django.conf import settings

    problem = per_process_cache_problem(workers=server.cfg.workers)
    keeps = settings.DATABASES["default"].get("CONN_MAX_AGE") != 0
    if problem is None and keeps and (limit := database_max_connections()) is not None:
        problem = connection_budget_problem(
            workers=server.cfg.workers, threads=server.cfg.threads, max_connections=limit
        )
    if problem:
        raise SystemExit(f"specboard: refusing to start: {problem}")
