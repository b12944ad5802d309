"""What the Redis broker holds, for the reconciler: waiting and unacked task ids (every GPU
host keeps its unacked messages under keys of its own), and results on their way to the
database; forgetting a lost worker's unacked messages; asking live workers what they execute;
for the hosts page, which workers answer with the queues they consume and how many messages
wait in a queue; and the broker's Redis ACL file: no anonymous user, the site's own user, and one
rule per GPU host that gives its worker exactly what it needs. Nothing here sends a task
(leaderboard.messaging.dispatch does).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings

from leaderboard.messaging.celery import (
    DB_QUEUE,
    HOST_TASKS,
    RECORD_FAILURE,
    RECORD_RESULT,
    SITE_QUEUE,
    app,
    gpu_queue,
    host_unacked_keys,
)
from leaderboard.messaging.workers import gpu_worker_name

# kombu's Redis transport keeps prioritised messages in keys with these suffixes.
_REDIS_PRIORITY_SEPARATOR = "\x06\x16"
_REDIS_PRIORITY_STEPS = (3, 6, 9)


@dataclass
class BrokerHoldings:
    """The task ids a broker holds: waiting in a queue, or delivered to a worker and not acked."""

    waiting: set[str] = field(default_factory=set)
    # Task id -> (the GPU host whose keys hold it, "" for the default ones; the transport's
    # delivery tag), so that a lost worker's message can be forgotten.
    unacked: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Jobs whose result or failure is on its way to the database (in the db queue).
    finishing_job_ids: set[int] = field(default_factory=set)
    # Jobs a GPU host reported on (progress, result or failure) that the database has not seen
    # yet: on the db queue or being recorded. A worker took such a job's message.
    reporting_job_ids: set[int] = field(default_factory=set)

    @property
    def task_ids(self) -> set[str]:
        return self.waiting | set(self.unacked)


_FINISHING_TASKS = (RECORD_RESULT, RECORD_FAILURE)


def _unacked_key(host: str, default: str) -> str:
    return host_unacked_keys(host).get("unacked_key", default)


def _registered_host_names() -> list[str]:
    from leaderboard.models import GpuHost

    return list(GpuHost.objects.values_list("name", flat=True))


def broker_holdings(queues: list[str], hosts: Iterable[str] | None = None) -> BrokerHoldings | None:
    """What the Redis broker holds for these queues and these GPU hosts' unacked messages (every
    registered host's by default), read in one transaction; None if unknown."""
    hosts = ["", *(_registered_host_names() if hosts is None else hosts)]
    keys = _queue_keys(queues)
    with app.connection_for_write() as connection:
        if connection.transport.driver_type != "redis":
            return None
        channel = connection.default_channel
        with channel.client.pipeline(transaction=True) as pipe:
            for key in keys:
                pipe.lrange(key, 0, -1)
            for host in hosts:
                pipe.hgetall(_unacked_key(host, channel.unacked_key))
            replies = pipe.execute()
    lists, unacked_by_host = replies[: len(keys)], zip(hosts, replies[len(keys) :], strict=True)
    holdings = BrokerHoldings()
    for message, tag in _tagged_messages(lists, unacked_by_host):
        _hold(holdings, message, tag)
    return holdings


def _queue_keys(queues: list[str]) -> list[str]:
    """The Redis lists behind these queues, every priority step included."""
    return [
        name
        # What hosts sent waits on db, or on site as the db worker's retry of it.
        for queue in [*queues, DB_QUEUE, SITE_QUEUE]
        for name in (
            queue,
            *(f"{queue}{_REDIS_PRIORITY_SEPARATOR}{step}" for step in _REDIS_PRIORITY_STEPS),
        )
    ]


def _tagged_messages(
    lists: list, unacked_by_host: Iterable[tuple[str, dict]]
) -> list[tuple[object, tuple[str, str] | None]]:
    """Each message with where it is unacked ((host, delivery tag)), or None while it waits."""
    messages: list[tuple[object, tuple[str, str] | None]] = [
        (message, None) for items in lists for message in map(_decoded, items)
    ]
    for host, unacked in unacked_by_host:
        for delivery_tag, raw in unacked.items():
            entry = _decoded(raw)
            if isinstance(entry, list) and entry:
                if isinstance(delivery_tag, bytes):
                    delivery_tag = delivery_tag.decode()
                messages.append((entry[0], (host, delivery_tag)))
    return messages


def _hold(holdings: BrokerHoldings, message: object, tag: tuple[str, str] | None) -> None:
    """Count one message: a host's report by its job, any other task by where it is."""
    if not isinstance(message, dict) or not isinstance(message.get("headers"), dict):
        return  # a host may push anything to db; the db worker drops it
    headers = message["headers"]
    task_id = headers.get("id")
    if headers.get("task") in HOST_TASKS:
        job_id = _job_id(message)
        if job_id is not None:
            holdings.reporting_job_ids.add(job_id)
            if headers.get("task") in _FINISHING_TASKS:
                holdings.finishing_job_ids.add(job_id)
    elif task_id:
        if tag is None:
            holdings.waiting.add(task_id)
        else:
            holdings.unacked[task_id] = tag


def _decoded(raw: bytes) -> object:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # a host may push anything to db
        return None


def _job_id(message: dict) -> int | None:
    """The job id in a db-queue message's keyword arguments (protocol 2, JSON body)."""
    try:
        body = json.loads(base64.b64decode(message["body"]))
        return int(body[1]["job_id"])
    except (KeyError, IndexError, TypeError, ValueError, RecursionError):
        return None


def forget_unacked(delivery_tags: list[tuple[str, str]]) -> None:
    """Drop lost workers' unacked messages ((host, delivery tag) as broker_holdings found them),
    so the broker never redelivers them a second time."""
    if not delivery_tags:
        return
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        with channel.client.pipeline(transaction=True) as pipe:
            for host, tag in delivery_tags:
                keys = host_unacked_keys(host)
                pipe.hdel(keys.get("unacked_key", channel.unacked_key), tag)
                pipe.zrem(keys.get("unacked_index_key", channel.unacked_index_key), tag)
            pipe.execute()


def active_task_ids(timeout_s: float = 2.0) -> set[str] | None:
    """Task ids that live workers are executing now; None when no worker answered."""
    replies = app.control.inspect(timeout=timeout_s).active()
    if not replies:
        return None
    # A GPU host answers in whatever shape it likes: only task ids count.
    return {
        task["id"]
        for tasks in replies.values()
        if isinstance(tasks, list)
        for task in tasks
        if isinstance(task, dict) and isinstance(task.get("id"), str)
    }


def live_workers(timeout_s: float | None = None) -> dict[str, list[str]] | None:
    """The workers that answer now, each with the queues it consumes ({} when the broker is
    reachable and none answers); None when the broker cannot be reached or asked. Workers get
    SPECBOARD_BROKER_INSPECT_SECONDS to answer unless `timeout_s` says otherwise."""
    if timeout_s is None:
        timeout_s = settings.SPECBOARD_BROKER_INSPECT_SECONDS
    # The reply queue is read by blocking pops of at most the timeout (kombu's default is a
    # second, which closing the connection would then wait out).
    options = {**app.conf.broker_transport_options, "polling_interval": timeout_s}
    try:
        with app.connection_for_read(transport_options=options) as connection:
            connection.ensure_connection(max_retries=1, timeout=timeout_s)
            replies = app.control.inspect(timeout=timeout_s, connection=connection).active_queues()
    except Exception:  # Any transport failure means "unknown", never a page error.
        return None
    # A GPU host answers in whatever shape it likes: only the queue names count.
    return {
        str(name): sorted(
            str(queue.get("name", ""))
            for queue in (queues if isinstance(queues, list) else [])
            if isinstance(queue, dict)
        )
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


# The broker user of the site's own processes (web, db worker, beat).
SITE_BROKER_USER = "specboard"


def site_acl_rules(*, password: str) -> list[str]:
    """The first lines of the broker's ACL file: `default`, the user of a client that sends no
    credentials, off and with no password and no right; the site's own processes as
    SITE_BROKER_USER with every right (the password stored hashed). The hosts' rules follow."""
    digest = hashlib.sha256(password.encode()).hexdigest()
    return [
        "user default off resetpass resetkeys resetchannels -@all",
        f"user {SITE_BROKER_USER} on #{digest} ~* &* +@all",
    ]


def host_acl_rule(*, host_name: str, hardware_slug: str, password: str, db: int = 0) -> str:
    """The Redis ACL rule (a users.acl line) for one GPU host's broker user, by name: exactly the
    keys, commands and channel its worker uses, under the worker's own name `gpu@<host>`.

    Its own keys (where it keeps its unacknowledged messages, its control queue) it may use
    freely, but no dangerous command, no publishing (no broadcast, no event), no other database
    and nothing that names keys it may not touch (`SCAN`, `RANDOMKEY`, `KEYS`, and `CLIENT
    TRACKING`, whose broadcast mode reports every key written). A key it shares with others it may
    touch only with the one or two commands kombu needs there (Redis ACL selectors): take jobs from
    its hardware's queue and put one back (as kombu does when a worker stops mid-job), push
    messages to `db` without reading, emptying or trimming it, push an answer to the reconciler's
    reply queue, declare its own bindings. The password is stored hashed (`#<sha256>`).
    """
    queue = gpu_queue(hardware_slug)
    unacked = host_unacked_keys(host_name)
    own_keys = [
        unacked["unacked_key"],
        unacked["unacked_index_key"],
        unacked["unacked_mutex_key"],
        f"{gpu_worker_name(host_name)}.celery.pidbox",
    ]
    bindings = [
        f"_kombu.binding.{queue}",
        f"_kombu.binding_permanent.{queue}",
        "_kombu.binding.celery.pidbox",
        "_kombu.binding_permanent.celery.pidbox",
    ]
    digest = hashlib.sha256(password.encode()).hexdigest()
    return " ".join(
        [
            f"user {host_name} on #{digest} resetkeys resetchannels",
            *(f"~{key}" for key in own_keys),
            f"&/{db}.celery.pidbox",
            "+@all -@dangerous -publish -spublish -keys -scan -randomkey -client|tracking",
            # Key patterns hold in every database: keep the host in its own.
            *(["-select"] if db == 0 else []),
            f"(~{queue} +brpop +lpush +rpush +llen)",
            f"({' '.join(f'~{key}' for key in bindings)} +sadd +srem)",
            "(%R~_kombu.binding.reply.celery.pidbox +smembers)",
            "(%W~*.reply.celery.pidbox +lpush)",
            f"(%W~{DB_QUEUE} +lpush)",
        ]
    )
