"""Real brokers and databases for tests that start worker processes."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection


@contextmanager
def celery_broker(url: str) -> Iterator[str]:
    """Point this process's Celery app at another broker for the length of a test.

    Celery reads CELERY_BROKER_URL from the environment before its own configuration, so the
    variable (which ./specboard test sets) must step aside too.
    """
    from leaderboard.celery import app

    saved_env = os.environ.pop("CELERY_BROKER_URL", None)
    previous = app.conf.broker_url
    app.conf.broker_url = url
    app._pool = None
    app.amqp._producer_pool = None
    try:
        yield url
    finally:
        app.conf.broker_url = previous
        app._pool = None
        app.amqp._producer_pool = None
        if saved_env is not None:
            os.environ["CELERY_BROKER_URL"] = saved_env


def database_url() -> str:
    """This test database as a URL that worker processes can reach (not in-memory SQLite)."""
    entry = connection.settings_dict
    if entry["ENGINE"].endswith("sqlite3"):
        if str(entry["NAME"]).startswith((":memory:", "file:memorydb")):
            pytest.skip("the worker processes cannot share an in-memory SQLite database")
        return f"sqlite:///{entry['NAME']}"
    password = f":{entry['PASSWORD']}" if entry["PASSWORD"] else ""
    host = entry["HOST"] or "127.0.0.1"
    return f"postgres://{entry['USER']}{password}@{host}:{entry['PORT'] or 5432}/{entry['NAME']}"


def gpu_worker_environment(hardware) -> dict[str, str]:
    """A GPU worker's environment as a registered host of this hardware kind: no database,
    its own name and signing key."""
    from leaderboard import services

    host, key = services.register_gpu_host(
        name=f"host-{uuid.uuid4().hex[:8]}", hardware_slug=hardware.slug
    )
    return {
        "SPECBOARD_ROLE": "gpu-worker",
        "SPECBOARD_HOST_NAME": host.name,
        "SPECBOARD_HOST_KEY": key,
    }
