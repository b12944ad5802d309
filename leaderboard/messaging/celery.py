"""The Celery app: benchmark jobs on one queue per hardware kind, what hosts send back on `db`,
the site's own periodic tasks on `site`.

A GPU worker consumes `gpu.<hardware-slug>` and needs only the broker URL, llama-server and the
model files; everything it learns travels back through the broker to tasks on the `db` queue.
`db` is the one queue a GPU host may write to (the broker's ACL,
leaderboard.messaging.broker.host_acl_rule, gives it no other); what the site sends itself, the
reconciler, the sweeper and the db worker's retries of what hosts sent, goes to `site`, which no
host can reach. Each queue carries only its own task names: the transport
(leaderboard.messaging.transport) drops anything else before a worker sees it, so a host cannot
make the db worker run a benchmark or the reconciler. Two periodic tasks keep the broker honest
against the database, which is the source of truth: the reconciler re-sends jobs the broker lost,
the sweeper fails jobs stuck past their time limit.
"""

from __future__ import annotations

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

DB_QUEUE = "db"
SITE_QUEUE = "site"
GPU_QUEUE_PREFIX = "gpu."
RECONCILE_EVERY_S = float(os.environ.get("SPECBOARD_RECONCILE_EVERY_S", "30"))
SWEEP_EVERY_S = float(os.environ.get("SPECBOARD_SWEEP_EVERY_S", "60"))

RUN_BENCHMARK = "leaderboard.tasks.run_benchmark_job"
RECORD_PROGRESS = "leaderboard.tasks.record_progress_task"
RECORD_RESULT = "leaderboard.tasks.record_result_task"
RECORD_FAILURE = "leaderboard.tasks.record_failure_task"
RECONCILE = "leaderboard.tasks.reconcile_jobs_task"
SWEEP = "leaderboard.tasks.sweep_stuck_jobs_task"
# What a GPU host may send back, the only tasks the `db` queue carries.
HOST_TASKS = frozenset({RECORD_PROGRESS, RECORD_RESULT, RECORD_FAILURE})
SITE_TASKS = frozenset({RECONCILE, SWEEP})

app = Celery("specboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Celery's Django fixup closes every database connection before and after every task, unless
# told to keep them for this many tasks: a db worker then opened a connection to PostgreSQL for
# each message a host sent, a large part of the time from a host's "started" to the job's claim.
# The worker keeps them as a web process does instead (`_keep_connections_as_requests_do`).
app.conf.CELERY_DB_REUSE_MAX = 2**30
app.conf.task_routes = {
    "leaderboard.tasks.record_*": {"queue": DB_QUEUE},
    RECONCILE: {"queue": SITE_QUEUE},
    SWEEP: {"queue": SITE_QUEUE},
}
app.conf.beat_schedule = {
    "reconcile-jobs-with-the-broker": {
        "task": RECONCILE,
        "schedule": RECONCILE_EVERY_S,
        # A late reconcile is useless: the next one is already due.
        "options": {"queue": SITE_QUEUE, "expires": RECONCILE_EVERY_S},
    },
    "fail-jobs-stuck-running": {
        "task": SWEEP,
        "schedule": SWEEP_EVERY_S,
        "options": {"queue": SITE_QUEUE, "expires": SWEEP_EVERY_S},
    },
}
app.autodiscover_tasks(["leaderboard"])


@signals.task_prerun.connect
@signals.task_postrun.connect
def _keep_connections_as_requests_do(sender=None, **_) -> None:
    """Around each task a worker runs, what Django does around each request: a connection older
    than CONN_MAX_AGE, left in a transaction or broken by an error is closed; a kept one is
    checked (CONN_HEALTH_CHECKS) before its next query. A database that went away is reconnected
    to. A task run eagerly (`apply`, the tests) runs in its caller's connection and transaction,
    which are the caller's to keep, as Celery's fixup leaves them."""
    if sender is None or getattr(sender.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


def gpu_queue(hardware_slug: str) -> str:
    """The queue name that the workers of one hardware kind consume."""
    return f"{GPU_QUEUE_PREFIX}{hardware_slug}"


def queue_tasks(queue: str) -> frozenset[str] | None:
    """The task names a message on this queue may carry; None for queues of Celery's own
    plumbing (remote control and its replies), which carry no tasks."""
    if queue == DB_QUEUE:
        return HOST_TASKS
    if queue == SITE_QUEUE:
        # And the db worker's own retries of what hosts sent (leaderboard.tasks.RETRY_ON_SITE).
        return SITE_TASKS | HOST_TASKS
    if queue.startswith(GPU_QUEUE_PREFIX):
        return frozenset({RUN_BENCHMARK})
    return None


def host_unacked_keys(host_name: str) -> dict[str, str]:
    """Where a GPU host's worker keeps the messages it holds and has not acknowledged yet: keys
    of its own (kombu's transport options), so that no host can read or restore another's."""
    if not host_name:
        return {}
    return {
        "unacked_key": f"unacked.{host_name}",
        "unacked_index_key": f"unacked.{host_name}.index",
        "unacked_mutex_key": f"unacked.{host_name}.mutex",
    }


def _consumed_queues(options: dict) -> set[str]:
    queues = options.get("queues") or []
    if isinstance(queues, str):
        queues = queues.split(",")
    return {str(queue).strip() for queue in queues}


@signals.celeryd_init.connect
def configure_worker(*, conf, options: dict, **_) -> None:
    """A worker's settings by what it is: the db worker takes no remote control (a GPU host may
    broadcast on the control channel, and must not stop or steer it); a GPU host's worker keeps
    its unacknowledged messages under its own keys and its control queue without an expiry (so
    it needs no access to the broker's shared binding deadlines)."""
    from django.conf import settings

    if DB_QUEUE in _consumed_queues(options) or SITE_QUEUE in _consumed_queues(options):
        conf.worker_enable_remote_control = False
    if settings.ROLE == "gpu-worker":
        conf.broker_transport_options = {
            **conf.broker_transport_options,
            **host_unacked_keys(settings.SPECBOARD_HOST_NAME),
        }
        conf.control_queue_expires = None
