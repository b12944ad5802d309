"""The Redis transport of the site's Celery app: every message is checked against the queue it
was taken from before a worker sees it.

A GPU host may write to its hardware's queue and to `db` (the broker's ACL), so what arrives
there is whatever a host chose to write. kombu's own Redis transport decodes a popped message
and hands it on: one that is not JSON, or not a message at all, ends the worker ("Unrecoverable
error: JSONDecodeError"), and one that names any registered task runs it. Here a message on a
queue of ours (`leaderboard.celery.queue_tasks`) must be a well-formed task message naming one of
that queue's own tasks; anything else is logged and dropped (it was already popped, so dropping
it is acknowledging it). A message kept has its delivery facts rewritten from the queue it came
from: the host chose the tag and the routing it carried, and kombu would file it under that tag
and restore it along that routing.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import uuid

from kombu.transport import redis

from leaderboard.celery import queue_tasks

logger = logging.getLogger(__name__)

# How much of a dropped message the log shows.
_SHOWN = 200


def message_refusal(message: object, allowed: frozenset[str]) -> str | None:
    """Why a decoded broker message is not a task message naming one of `allowed`, or None."""
    if not isinstance(message, dict):
        return f"not a message but {type(message).__name__}"
    headers, properties = message.get("headers"), message.get("properties")
    if not isinstance(headers, dict) or not isinstance(properties, dict):
        return "no headers or properties"
    task = headers.get("task")
    if task not in allowed:
        return f"task {str(task)[:_SHOWN]!r} does not belong on this queue"
    if not isinstance(headers.get("id"), str):
        return "no task id"
    if message.get("content-type") != "application/json":
        return "not JSON content"
    if properties.get("body_encoding") != "base64" or not isinstance(message.get("body"), str):
        return "no base64 body"
    try:
        body = json.loads(base64.b64decode(message["body"], validate=True))
    except (binascii.Error, ValueError):
        return "its body does not decode"
    if not (
        isinstance(body, list)
        and len(body) == 3
        and isinstance(body[0], list)
        and isinstance(body[1], dict)
        and isinstance(body[2], dict)
    ):
        return "its body is not [args, kwargs, embed]"
    return None


class Channel(redis.Channel):
    """kombu's Redis channel, which drops a popped message that does not decode."""

    def _brpop_read(self, **options):
        try:
            return super()._brpop_read(**options)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            # Raised by the decoding, after the pop and before any delivery: nothing holds it.
            shown = error.doc if isinstance(error, json.JSONDecodeError) else error.object
            logger.error("dropped a broker message that does not decode: %r", shown[:_SHOWN])
            return True


class Transport(redis.Transport):
    """kombu's Redis transport, which checks each message against the queue it came from."""

    Channel = Channel

    def _deliver(self, message, queue):
        allowed = queue_tasks(queue)
        if allowed is not None:
            if (problem := message_refusal(message, allowed)) is not None:
                logger.error("dropped a message on queue %r: %s", queue, problem)
                return
            properties = message["properties"]
            properties["delivery_tag"] = str(uuid.uuid4())
            properties["delivery_info"] = {"exchange": "", "routing_key": queue}
        super()._deliver(message, queue)
