"""The app's Redis transport (leaderboard.messaging.transport) on a real redis-server, with a GPU
host's broker user writing to `db`: what it drops (what does not decode, nests too deep, is too
large, names another queue's task, asks for steps after its task or sets when, how long or how
often it runs), what it delivers, and a consumer's own errors, which it leaves alone. The real db
worker facing the same messages is tests/system/test_broker_acl_worker.py."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kombu import Connection, Consumer, Queue

from leaderboard.messaging import dispatch, signing
from leaderboard.messaging.broker import host_acl_rule
from leaderboard.messaging.celery import (
    DB_QUEUE,
    HOST_TASKS,
    RECONCILE,
    RECORD_PROGRESS,
    RUN_BENCHMARK,
    SITE_TASKS,
)
from leaderboard.messaging.transport import message_refusal
from tests.support.brokers import PrivateRedis, celery_broker, task_message

REPOSITORY = Path(__file__).resolve().parents[2]
LARGEST_RESULT = "docs/gpu-results/h200-run8/8b-dflash8-concurrency.json"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateRedis]:
    rule = host_acl_rule(host_name="lab-a", hardware_slug="h200", password="pw-a")
    server = PrivateRedis(tmp_path_factory.mktemp("acl"), acl_rules=[rule])
    server.start()
    yield server
    server.stop()


@pytest.fixture
def site(broker) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(broker.url)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def lab_a(broker, site) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(broker.url_for("lab-a", "pw-a"))
    yield client
    client.close()


def test_a_real_h200_result_sent_back_by_a_host_passes_the_transport(broker, site, settings):
    """The largest measured result in docs/gpu-results, as a host's worker sends it back: within
    the size and depth bounds, with the headers and embed Celery writes by default."""
    result = json.loads((REPOSITORY / LARGEST_RESULT).read_text())
    settings.SPECBOARD_HOST_NAME, settings.SPECBOARD_HOST_KEY = "lab-a", signing.new_key()
    with celery_broker(broker.url_for("lab-a", "pw-a")):
        dispatch.send_result(job_id=1, delivery="d", result=result)
    (raw,) = site.lrange(DB_QUEUE, 0, -1)
    assert len(raw) > 1_000_000
    assert message_refusal(json.loads(raw), HOST_TASKS) is None


def test_the_transport_drops_what_does_not_belong_on_db_and_delivers_the_rest(
    broker, site, lab_a, caplog
):
    hostile = [
        "not-json",
        b"\xff\xfe",
        "5",
        "{}",
        json.dumps({"headers": {"task": RECORD_PROGRESS}, "properties": {}, "body": "%%"}),
        task_message(RUN_BENCHMARK, {"job_id": 1}),
        task_message("leaderboard.tasks.reconcile_jobs_task", {}),
    ]
    for message in [*hostile, task_message(RECORD_PROGRESS, {"job_id": 1})]:
        lab_a.lpush(DB_QUEUE, message)

    delivered = []
    with Connection(
        broker.url, transport="leaderboard.messaging.transport:Transport"
    ) as connection:
        queue = Queue(DB_QUEUE, no_declare=True)
        with Consumer(connection, [queue], callbacks=[lambda body, m: delivered.append(m)]):
            for _ in range(len(hostile) + 1):
                try:
                    connection.drain_events(timeout=2)
                except TimeoutError:
                    break

    (message,) = delivered
    assert message.headers["task"] == RECORD_PROGRESS
    # The host chose neither its tag nor where a restore would put it.
    assert message.delivery_tag != "chosen-by-the-host"
    assert message.delivery_info["routing_key"] == DB_QUEUE
    drops = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(drops) == len(hostile), drops


def test_a_consumers_own_error_on_a_kept_message_is_not_taken_for_one_that_does_not_decode(
    broker, site, lab_a, caplog
):
    lab_a.lpush(DB_QUEUE, task_message(RECORD_PROGRESS, {"job_id": 1}))

    def consumer_with_a_bug(body, message):
        raise TypeError("a bug of the consumer's")

    with Connection(
        broker.url, transport="leaderboard.messaging.transport:Transport"
    ) as connection:
        queue = Queue(DB_QUEUE, no_declare=True)
        with Consumer(connection, [queue], callbacks=[consumer_with_a_bug]):
            with pytest.raises(TypeError, match="a bug of the consumer's"):
                connection.drain_events(timeout=2)
    assert not [r for r in caplog.records if "dropped" in r.getMessage()]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ([], "not a message"),
        ({"headers": {"task": RUN_BENCHMARK}, "properties": {}}, "does not belong"),
        (json.loads(task_message(RECORD_PROGRESS, {})) | {"content-type": "x"}, "not JSON"),
        (json.loads(task_message(RECORD_PROGRESS, {})) | {"body": "!!"}, "does not decode"),
    ],
)
def test_a_message_refusal_says_what_is_wrong(message, reason):
    assert reason in message_refusal(message, frozenset({RECORD_PROGRESS}))


def steered(headers: dict | None = None, embed: dict | None = None, body: str | None = None):
    """A record_progress_task message with what a host added to it."""
    message = json.loads(task_message(RECORD_PROGRESS, {"job_id": 1}))
    message["headers"] |= headers or {}
    if embed is not None or body is not None:
        body = body or json.dumps([[], {"job_id": 1}, embed])
        message["body"] = base64.b64encode(body.encode()).decode()
    return message


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (steered({"eta": "2027-12-07T00:00:00+00:00"}), "it sets eta"),
        (steered({"countdown": 60}), "it sets countdown"),
        (steered({"expires": 1.0}), "it sets expires"),
        (steered({"timelimit": [1, None]}), "it sets timelimit"),
        (steered({"retries": 1}), "it sets retries"),
        (steered(embed={"callbacks": [{"task": RUN_BENCHMARK}]}), "asks for callbacks"),
        (steered(embed={"errbacks": [{"task": RUN_BENCHMARK}]}), "asks for errbacks"),
        (steered(embed={"chain": [{"task": RUN_BENCHMARK}]}), "asks for chain"),
        (steered(embed={"chord": {"task": RUN_BENCHMARK}}), "asks for chord"),
        (steered(embed={"reply_to": "x"}), "its embed names ['reply_to']"),
        (steered(body="[" * 3000 + "]" * 3000), "does not decode (RecursionError)"),
        (steered(body='[[], {"d": {"__type__": "datetime", "__value__": 5}}, {}]'), "TypeError"),
        (steered(body=json.dumps([[], {"p": json.loads("[" * 40 + "]" * 40)}, {}])), "deeper"),
    ],
)
def test_a_host_may_not_steer_the_db_worker_nor_send_what_does_not_decode(message, reason):
    assert reason in message_refusal(message, frozenset({RECORD_PROGRESS}))


def test_a_message_over_the_bound_is_refused_and_beats_expiry_holds_on_the_sites_own_queue(
    settings,
):
    settings.SPECBOARD_MAX_BROKER_MESSAGE_BYTES = 4096
    padded = json.loads(task_message(RECORD_PROGRESS, {"job_id": 1, "pad": "x" * 4096}))
    assert "over SPECBOARD_MAX_BROKER_MESSAGE_BYTES" in message_refusal(padded, HOST_TASKS)
    # Beat gives the reconciler an expiry; only the site writes to `site`.
    reconcile = steered({"task": RECONCILE, "expires": "2026-12-07T00:00:30+00:00"})
    assert message_refusal(reconcile, SITE_TASKS, from_site=True) is None
    assert message_refusal(reconcile, SITE_TASKS) == "it sets expires"
