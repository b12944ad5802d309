"""The Celery app: benchmark jobs on one queue per hardware kind, recording on the `db` queue.

A GPU worker consumes `gpu.<hardware-slug>` and needs only the broker URL, llama-server and the
model files; everything it learns travels back through the broker to tasks on the `db` queue.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

DB_QUEUE = "db"
GPU_QUEUE_PREFIX = "gpu."

app = Celery("specboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_routes = {
    "leaderboard.tasks.record_*": {"queue": DB_QUEUE},
}
app.autodiscover_tasks(["leaderboard"])


def gpu_queue(hardware_slug: str) -> str:
    """The queue name that the workers of one hardware kind consume."""
    return f"{GPU_QUEUE_PREFIX}{hardware_slug}"
