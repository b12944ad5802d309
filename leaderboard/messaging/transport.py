"""The Redis transport of the site's Celery app: every message is judged against the queue it
was taken from before a worker (or the reconciler's question) sees it.

A GPU host may write to its hardware's queue, to `db` and to the reply queues of the site's
questions (the broker's ACL), so what arrives there is whatever a host chose to write. kombu's
own Redis transport decodes a popped message and hands it on: one that does not decode (not
JSON, nested past Python's recursion limit, a typed value kombu cannot build) ends the worker
("Unrecoverable error"), and one that names any registered task runs it, with whatever callbacks,
chain, eta or time limit it carries. Here every message must be at most
SPECBOARD_MAX_BROKER_MESSAGE_BYTES, nested at most MAX_DEPTH deep and have a body that decodes as
Celery will decode it; on a queue of ours (`leaderboard.messaging.celery.queue_tasks`) it must
moreover be a plain task message naming one of that queue's own tasks, with nothing to run after it
and, on a queue a host can write (all but `site`), to be run now, once, with no time limit.
Anything else is logged and dropped (it was already popped, so dropping it is acknowledging it). A
message kept has its delivery facts rewritten from the queue it came from: the host chose the tag
and the routing it carried, and kombu would file it under that tag and restore it along that
routing.
"""

from __future__ import annotations

import base64
import json
import logging
import uuid

from django.conf import settings
from kombu.transport import redis
from kombu.utils.json import loads

from leaderboard.messaging.celery import SITE_QUEUE, queue_tasks

logger = logging.getLogger(__name__)

# How much of a dropped message the log shows.
_SHOWN = 200
# How deep a message and its body may nest: a host's result is six levels deep, its message
# three more.
MAX_DEPTH = 32
# What kombu's JSON decoding raises on input it cannot decode: not JSON or not UTF-8
# (ValueError), nested past the recursion limit (RecursionError), a typed value (`__type__`) it
# cannot build (ValueError, TypeError, AttributeError).
DECODING_ERRORS = (ValueError, TypeError, AttributeError, RecursionError)
# The note on an error raised by a consumer of a delivered message.
_DELIVERED = "raised while a consumer took a delivered message"
# What Celery puts in a message's `embed`: what the worker runs or sends after the task. A host's
# message carries none of it.
_EMBED = frozenset({"callbacks", "errbacks", "chain", "chord"})
# Headers that tell the worker when, how long or how often to run a task, with the values Celery
# itself writes when none is asked for: a host's message may carry no others.
_UNSTEERED = {
    "eta": (None,),
    "countdown": (None,),
    "expires": (None,),
    "timelimit": (None, [None, None]),
    "retries": (None, 0),
}


def _too_deep(document: object) -> bool:
    """Whether a decoded document nests deeper than MAX_DEPTH (walked without recursion)."""
    pending = [(document, 1)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                return True
            children = node.values() if isinstance(node, dict) else node
            pending.extend((child, depth + 1) for child in children)
    return False


def _body(message: dict) -> tuple[object, str | None]:
    """A message's body decoded as Celery decodes it, or why it does not decode."""
    if message.get("content-type") != "application/json":
        return None, "not JSON content"
    properties = message.get("properties")
    if not isinstance(properties, dict) or properties.get("body_encoding") != "base64":
        return None, "no base64 body"
    if not isinstance(message.get("body"), str):
        return None, "no base64 body"
    try:
        body = loads(base64.b64decode(message["body"], validate=True))
    except DECODING_ERRORS as error:
        return None, f"its body does not decode ({type(error).__name__})"
    if _too_deep(body):
        return None, f"its body nests deeper than {MAX_DEPTH}"
    return body, None


def message_refusal(
    message: object, allowed: frozenset[str] | None, *, from_site: bool = False
) -> str | None:
    """Why a decoded broker message may not be delivered, or None: any message must be bounded
    and decode; on a task queue (`allowed`, its task names) it must be a plain task message
    naming one of them, run now and once unless it is on a queue only the site writes to
    (`from_site`: beat gives its periodic tasks an expiry)."""
    if not isinstance(message, dict):
        return f"not a message but {type(message).__name__}"
    if problem := _envelope_problem(message):
        return problem
    if allowed is not None and (problem := _task_problem(message["headers"], allowed, from_site)):
        return problem
    body, problem = _body(message)
    if problem is not None:
        return problem
    if allowed is None:
        # Celery's own plumbing: a remote-control request or a reply, an object either way.
        return None if isinstance(body, dict) else "its body is not an object"
    return _task_body_problem(body)


def _envelope_problem(message: dict) -> str | None:
    """Why a message is too deep, too large or lacks its headers and properties, or None."""
    if _too_deep(message):
        return f"it nests deeper than {MAX_DEPTH}"
    size = len(json.dumps(message, default=str))
    if size > settings.SPECBOARD_MAX_BROKER_MESSAGE_BYTES:
        return f"{size} bytes, over SPECBOARD_MAX_BROKER_MESSAGE_BYTES"
    if not isinstance(message.get("headers"), dict) or not isinstance(
        message.get("properties"), dict
    ):
        return "no headers or properties"
    return None


def _task_problem(headers: dict, allowed: frozenset[str], from_site: bool) -> str | None:
    """Why a task message's headers do not name one of the queue's tasks, to be run now and
    once (unless the site sent it), or None."""
    task = headers.get("task")
    if task not in allowed:
        return f"task {str(task)[:_SHOWN]!r} does not belong on this queue"
    if not isinstance(headers.get("id"), str):
        return "no task id"
    for name, defaults in _UNSTEERED.items():
        if not from_site and headers.get(name) not in defaults:
            return f"it sets {name}"
    return None


def _task_body_problem(body: object) -> str | None:
    """Why a task message's body is not [args, kwargs, embed] with an embed that asks for
    nothing after the task, or None."""
    if not (
        isinstance(body, list)
        and len(body) == 3
        and isinstance(body[0], list)
        and isinstance(body[1], dict)
        and isinstance(body[2], dict)
    ):
        return "its body is not [args, kwargs, embed]"
    embed = body[2]
    if not embed.keys() <= _EMBED:
        return f"its embed names {sorted(embed.keys() - _EMBED)[:3]!r}"
    if steps := sorted(name for name, value in embed.items() if value is not None):
        return f"it asks for {', '.join(steps)} after the task"
    return None


class Channel(redis.Channel):
    """kombu's Redis channel, which drops a popped message that does not decode."""

    def _brpop_read(self, **options):
        try:
            return super()._brpop_read(**options)
        except DECODING_ERRORS as error:
            if _DELIVERED in getattr(error, "__notes__", ()):
                raise
            # Raised by the decoding, after the pop and before any delivery (the transport's
            # judge below raises none of these): nothing holds the message.
            shown = error.doc if isinstance(error, json.JSONDecodeError) else str(error)
            if isinstance(error, UnicodeDecodeError):
                shown = error.object
            logger.error(
                "dropped a broker message that does not decode: %r (%s)",
                shown[:_SHOWN],
                type(error).__name__,
            )
            return True


class Transport(redis.Transport):
    """kombu's Redis transport, which judges each message against the queue it came from."""

    Channel = Channel

    def _deliver(self, message, queue):
        allowed = queue_tasks(queue)
        problem = message_refusal(message, allowed, from_site=queue == SITE_QUEUE)
        if problem is not None:
            logger.error("dropped a message on queue %r: %s", queue, problem)
            return
        if allowed is not None:
            properties = message["properties"]
            properties["delivery_tag"] = str(uuid.uuid4())
            properties["delivery_info"] = {"exchange": "", "routing_key": queue}
        try:
            super()._deliver(message, queue)
        except DECODING_ERRORS as error:
            # A consumer's own error on a message it was given, not a decoding one: the channel
            # lets it through as kombu would.
            error.add_note(_DELIVERED)
            raise
