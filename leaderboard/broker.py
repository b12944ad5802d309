"""What the Redis broker holds, for the reconciler: waiting and unacked task ids, and results on
their way to the database; forgetting a lost worker's unacked messages; asking live workers what
they execute; for the hosts page, which workers answer with the queues they consume and how
many messages wait in a queue. Nothing here sends a task (leaderboard.dispatch does).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

from leaderboard.celery import DB_QUEUE, app
from leaderboard.dispatch import RECORD_FAILURE, RECORD_RESULT

# kombu's Redis transport keeps prioritised messages in keys with these suffixes.
_REDIS_PRIORITY_SEPARATOR = "\x06\x16"
_REDIS_PRIORITY_STEPS = (3, 6, 9)


@dataclass
class BrokerHoldings:
    """The task ids a broker holds: waiting in a queue, or delivered to a worker and not acked."""

    waiting: set[str] = field(default_factory=set)
    # Task id -> the transport's delivery tag, so that a lost worker's message can be forgotten.
    unacked: dict[str, str] = field(default_factory=dict)
    # Jobs whose result or failure is on its way to the database (in the db queue).
    finishing_job_ids: set[int] = field(default_factory=set)

    @property
    def task_ids(self) -> set[str]:
        return self.waiting | set(self.unacked)


_FINISHING_TASKS = (RECORD_RESULT, RECORD_FAILURE)


def broker_holdings(queues: list[str]) -> BrokerHoldings | None:
    """What the Redis broker holds for these queues, read in one transaction; None if unknown."""
    with app.connection_for_write() as connection:
        if connection.transport.driver_type != "redis":
            return None
        channel = connection.default_channel
        client = channel.client
        keys = [
            name
            for queue in [*queues, DB_QUEUE]
            for name in (
                queue,
                *(f"{queue}{_REDIS_PRIORITY_SEPARATOR}{step}" for step in _REDIS_PRIORITY_STEPS),
            )
        ]
        with client.pipeline(transaction=True) as pipe:
            for key in keys:
                pipe.lrange(key, 0, -1)
            pipe.hgetall(channel.unacked_key)
            *lists, unacked = pipe.execute()
    holdings = BrokerHoldings()
    messages = [(json.loads(raw), None) for items in lists for raw in items]
    for tag, raw in unacked.items():
        message, _exchange, routing_key = json.loads(raw)
        messages.append((message, tag.decode() if isinstance(tag, bytes) else tag))
    for message, tag in messages:
        headers = message.get("headers") or {}
        task_id = headers.get("id")
        if headers.get("task") in _FINISHING_TASKS:
            job_id = _job_id(message)
            if job_id is not None:
                holdings.finishing_job_ids.add(job_id)
        elif task_id and tag is None:
            holdings.waiting.add(task_id)
        elif task_id:
            holdings.unacked[task_id] = tag
    return holdings


def _job_id(message: dict) -> int | None:
    """The job id in a db-queue message's keyword arguments (protocol 2, JSON body)."""
    try:
        body = json.loads(base64.b64decode(message["body"]))
        return int(body[1]["job_id"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def forget_unacked(delivery_tags: list[str]) -> None:
    """Drop a lost worker's unacked messages, so the broker never redelivers them a second time."""
    if not delivery_tags:
        return
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        with channel.client.pipeline(transaction=True) as pipe:
            pipe.hdel(channel.unacked_key, *delivery_tags)
            pipe.zrem(channel.unacked_index_key, *delivery_tags)
            pipe.execute()


def active_task_ids(timeout_s: float = 2.0) -> set[str] | None:
    """Task ids that live workers are executing now; None when no worker answered."""
    replies = app.control.inspect(timeout=timeout_s).active()
    if not replies:
        return None
    return {task["id"] for tasks in replies.values() for task in tasks or []}


def live_workers(timeout_s: float = 1.0) -> dict[str, list[str]] | None:
    """The workers that answer now, each with the queues it consumes ({} when the broker is
    reachable and none answers); None when the broker cannot be reached or asked."""
    try:
        with app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=timeout_s)
            replies = app.control.inspect(timeout=timeout_s, connection=connection).active_queues()
    except Exception:  # Any transport failure means "unknown", never a page error.
        return None
    return {
        str(name): sorted(str(queue.get("name", "")) for queue in queues or [])
        for name, queues in (replies or {}).items()
    }


def queue_lengths(queues: list[str]) -> dict[str, int] | None:
    """Messages waiting in each queue of a Redis broker (priority lists included); None for any
    other transport or an unreachable broker."""
    try:
        with app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=1.0)
            if connection.transport.driver_type != "redis":
                return None
            client = connection.default_channel.client
            with client.pipeline(transaction=False) as pipe:
                for queue in queues:
                    for key in (
                        queue,
                        *(f"{queue}{_REDIS_PRIORITY_SEPARATOR}{s}" for s in _REDIS_PRIORITY_STEPS),
                    ):
                        pipe.llen(key)
                counts = pipe.execute()
    except Exception:  # The count is a nicety; the database's own count stands.
        return None
    per_queue = 1 + len(_REDIS_PRIORITY_STEPS)
    return {
        queue: sum(counts[i * per_queue : (i + 1) * per_queue]) for i, queue in enumerate(queues)
    }
