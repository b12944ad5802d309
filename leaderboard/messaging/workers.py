"""The Celery worker command lines: the one place that spells them out.

Quick start, docker-compose, the Dockerfile, the tests and the benches all start their workers
from these argument lists (docker-compose and the Dockerfile through
`python -m leaderboard.messaging.workers db|gpu SLUG|beat`, which execs the same list). The db
worker records results and runs the reconciler and the sweeper when it embeds beat; a GPU worker
consumes its hardware's queue one benchmark at a time, in the threads pool, so a running
benchmark sees its cancellation (a revoke). A registered GPU host's worker is named for the host
(`gpu@<SPECBOARD_HOST_NAME>`), so that /hosts/ can tell which host a live worker is.

The db worker consumes `db` (what hosts send back) and `site` (the site's own periodic tasks),
takes no remote control (leaderboard.messaging.celery.configure_worker) and asks no neighbour
anything at start (mingle) or later (gossip): every other worker is a GPU host's. A GPU worker
publishes nothing on the broker's event and control channels (no heartbeat, mingle or gossip),
which its ACL does not let it do; it still receives revokes and answers the reconciler's questions.
"""

from __future__ import annotations

import argparse
import os
import sys

from django.conf import settings

from leaderboard.messaging.celery import DB_QUEUE, SITE_QUEUE, gpu_queue

_CELERY = ["-m", "celery", "-A", "leaderboard"]
# Test and bench workers skip the cluster chatter that only slows their start and stop.
_QUIET = ["--without-heartbeat", "--without-mingle", "--without-gossip"]
# The db worker never asks a GPU host's worker anything (a host may answer in another's name).
_DB_ALONE = ["--without-mingle", "--without-gossip"]


def _worker(*, queue: str, hostname: str, loglevel: str, quiet: bool) -> list[str]:
    return [
        sys.executable,
        *_CELERY,
        "worker",
        "-Q",
        queue,
        "--hostname",
        hostname,
        "--loglevel",
        loglevel,
        *(_QUIET if quiet else []),
    ]


def db_worker_argv(
    *,
    concurrency: int = 1,
    hostname: str = "db@%h",
    beat_schedule: str | None = None,
    loglevel: str = "INFO",
    quiet: bool = False,
) -> list[str]:
    """The db-side worker, on the `db` and `site` queues; with beat_schedule it also runs the
    periodic tasks (embedded beat)."""
    argv = _worker(
        queue=f"{DB_QUEUE},{SITE_QUEUE}", hostname=hostname, loglevel=loglevel, quiet=quiet
    )
    argv += [] if quiet else _DB_ALONE
    argv += ["--concurrency", str(concurrency)]
    if beat_schedule is not None:
        argv += ["-B", "--schedule", beat_schedule]
    return argv


def gpu_worker_name(host_name: str | None = None) -> str:
    """A GPU worker's node name: `gpu@<host name>` for a registered host (by default this one's,
    SPECBOARD_HOST_NAME), else `gpu@%h`, the machine's name."""
    if host_name is None:
        host_name = settings.SPECBOARD_HOST_NAME
    return f"gpu@{host_name}" if host_name else "gpu@%h"


def gpu_worker_argv(
    *,
    hardware_slug: str,
    hostname: str | None = None,
    loglevel: str = "INFO",
) -> list[str]:
    """A GPU host's worker: its hardware's queue, one benchmark at a time, threads pool, silent
    on the event and control channels; named `gpu_worker_name()` unless a hostname is given."""
    hostname = hostname or gpu_worker_name()
    argv = _worker(queue=gpu_queue(hardware_slug), hostname=hostname, loglevel=loglevel, quiet=True)
    return [*argv, "--pool", "threads", "--concurrency", "1"]


def beat_argv(*, schedule: str, loglevel: str = "INFO") -> list[str]:
    """A standalone beat process (for deployments whose db workers do not embed it)."""
    return [sys.executable, *_CELERY, "beat", "--schedule", schedule, "--loglevel", loglevel]


def argv_for(arguments: list[str]) -> list[str]:
    """The command line that `python -m leaderboard.messaging.workers ARGUMENTS` runs."""
    parser = argparse.ArgumentParser(prog="python -m leaderboard.messaging.workers")
    roles = parser.add_subparsers(dest="role", required=True)
    db = roles.add_parser("db", help="the db-side worker")
    db.add_argument("--concurrency", type=int, default=1)
    db.add_argument("--beat-schedule", help="also run the periodic tasks, scheduled in this file")
    gpu = roles.add_parser("gpu", help="a GPU worker for one hardware kind")
    gpu.add_argument("hardware_slug")
    beat = roles.add_parser("beat", help="the periodic tasks alone")
    beat.add_argument("--schedule", default="/tmp/celerybeat-schedule")
    options = parser.parse_args(arguments)
    if options.role == "db":
        argv = db_worker_argv(concurrency=options.concurrency, beat_schedule=options.beat_schedule)
    elif options.role == "gpu":
        argv = gpu_worker_argv(hardware_slug=options.hardware_slug)
    else:
        argv = beat_argv(schedule=options.schedule)
    return argv


def main() -> None:
    """Exec the worker that the deployment's command line asks for."""
    argv = argv_for(sys.argv[1:])
    sys.stdout.flush()
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
