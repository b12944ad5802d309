"""Real brokers and databases for tests that start worker processes: a private redis-server
(optionally with the users of an ACL file), the Celery app pointed at another broker, this test
database as a URL, a registered GPU host's worker environment; messages as kombu's Redis
transport stores them, as a host may write them."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from django.db import connection

from leaderboard.messaging.broker import SITE_BROKER_USER, site_acl_rules
from leaderboard.messaging.celery import SITE_QUEUE


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PrivateRedis:
    """A throwaway redis-server on a free port without persistence, so a restart loses every
    message; with `acl_rules` its users are those lines of an ACL file after the documented
    first lines (leaderboard.messaging.broker.site_acl_rules: no anonymous user, the site's own),
    unless a rule names `default`; `url` is then the site user's."""

    def __init__(self, directory: Path, acl_rules: list[str] | None = None) -> None:
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server is not installed")
        self.port = free_port()
        self.directory = directory
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.acl_file: Path | None = None
        if acl_rules is not None:
            site = site_acl_rules(password=SITE_PASSWORD)
            if any(rule.startswith("user default ") for rule in acl_rules):
                site = []
            else:
                self.url = self.url_for(SITE_BROKER_USER, SITE_PASSWORD)
            self.acl_file = directory / "users.acl"
            self.acl_file.write_text("\n".join([*site, *acl_rules]) + "\n")
        self.process: subprocess.Popen | None = None

    def url_for(self, user: str, password: str) -> str:
        """The broker URL of one ACL user."""
        return f"redis://{user}:{password}@127.0.0.1:{self.port}/0"

    def start(self) -> None:
        acl = ["--aclfile", str(self.acl_file)] if self.acl_file else []
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "no", "--dir", str(self.directory), *acl],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.AuthenticationError:
                return  # up, and refusing a client without credentials
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


# The password of the site's own broker user in a PrivateRedis with an ACL.
SITE_PASSWORD = "the-sites-broker-password"


@contextmanager
def celery_broker(url: str) -> Iterator[str]:
    """Point this process's Celery app at another broker for the length of a test.

    Celery reads CELERY_BROKER_URL from the environment before its own configuration, so the
    variable (which ./specboard test sets) must step aside too.
    """
    from leaderboard.messaging.celery import app

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


def task_message(task: str, kwargs: dict) -> str:
    """A Celery task message as kombu's Redis transport stores it."""
    body = base64.b64encode(json.dumps([[], kwargs, {}]).encode()).decode()
    return json.dumps(
        {
            "body": body,
            "content-encoding": "utf-8",
            "content-type": "application/json",
            "headers": {"task": task, "id": "t-1", "lang": "py"},
            "properties": {
                "body_encoding": "base64",
                "delivery_tag": "chosen-by-the-host",
                "delivery_info": {"exchange": "", "routing_key": SITE_QUEUE},
                "priority": 0,
            },
        }
    )


def envelope(body: str, **headers) -> str:
    """A message as kombu's Redis transport stores it, its body given as JSON text."""
    return json.dumps(
        {
            "body": base64.b64encode(body.encode()).decode(),
            "content-encoding": "utf-8",
            "content-type": "application/json",
            "headers": headers,
            "properties": {"body_encoding": "base64", "delivery_tag": "t", "priority": 0},
        }
    )
