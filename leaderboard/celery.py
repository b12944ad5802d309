"""The Celery app: benchmark jobs on one queue per hardware kind, recording on the `db` queue.

A GPU worker consumes `gpu.<hardware-slug>` and needs only the broker URL, llama-server and the
model files; everything it learns travels back through the broker to tasks on the `db` queue.
Two periodic tasks keep the broker honest against the database, which is the source of truth:
the reconciler re-sends jobs the broker lost, the sweeper fails jobs stuck past their time limit.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

DB_QUEUE = "db"
GPU_QUEUE_PREFIX = "gpu."
RECONCILE_EVERY_S = float(os.environ.get("SPECBOARD_RECONCILE_EVERY_S", "30"))
SWEEP_EVERY_S = float(os.environ.get("SPECBOARD_SWEEP_EVERY_S", "60"))

app = Celery("specboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_routes = {
    "leaderboard.tasks.record_*": {"queue": DB_QUEUE},
    "leaderboard.tasks.reconcile_*": {"queue": DB_QUEUE},
    "leaderboard.tasks.sweep_*": {"queue": DB_QUEUE},
}
app.conf.beat_schedule = {
    "reconcile-jobs-with-the-broker": {
        "task": "leaderboard.tasks.reconcile_jobs_task",
        "schedule": RECONCILE_EVERY_S,
        # A late reconcile is useless: the next one is already due.
        "options": {"queue": DB_QUEUE, "expires": RECONCILE_EVERY_S},
    },
    "fail-jobs-stuck-running": {
        "task": "leaderboard.tasks.sweep_stuck_jobs_task",
        "schedule": SWEEP_EVERY_S,
        "options": {"queue": DB_QUEUE, "expires": SWEEP_EVERY_S},
    },
}
app.autodiscover_tasks(["leaderboard"])


def gpu_queue(hardware_slug: str) -> str:
    """The queue name that the workers of one hardware kind consume."""
    return f"{GPU_QUEUE_PREFIX}{hardware_slug}"
