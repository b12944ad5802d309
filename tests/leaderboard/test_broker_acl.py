"""The broker's users (leaderboard.messaging.broker): no anonymous user, the site's own, and a GPU
host's as host_acl_rule spells it, on a real redis-server started with that ACL (the example file
and compose's own command as they are); the reconciler's reads of what hosts write. No worker
process: the real db worker facing the same attacks is tests/system/test_broker_acl_worker.py;
the transport's judgement of each message is tests/leaderboard/test_transport.py."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import yaml
from kombu.exceptions import OperationalError

from leaderboard.messaging import dispatch, signing
from leaderboard.messaging.broker import host_acl_rule, site_acl_rules
from leaderboard.messaging.celery import (
    DB_QUEUE,
    HOST_TASKS,
    RECORD_PROGRESS,
    RECORD_RESULT,
    RUN_BENCHMARK,
    SITE_QUEUE,
    app,
)
from leaderboard.messaging.transport import message_refusal
from tests.support.brokers import (
    PrivateRedis,
    celery_broker,
    envelope,
    free_port,
    task_message,
)

HOSTS = {"lab-a": ("h200", "pw-a"), "lab-b": ("h200-x2", "pw-b")}
REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLE_ACL = REPOSITORY / "examples" / "redis-users.acl"
# What Redis answers a client that sent no credentials, whatever it asked.
REQUIRED = "Authentication required"
LARGEST_RESULT = "docs/gpu-results/h200-run8/8b-dflash8-concurrency.json"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateRedis]:
    rules = [
        host_acl_rule(host_name=name, hardware_slug=slug, password=password)
        for name, (slug, password) in HOSTS.items()
    ]
    server = PrivateRedis(tmp_path_factory.mktemp("acl"), acl_rules=rules)
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


def refused(call) -> bool:
    """Whether Redis refused the call for want of permission (kombu says so in its own error)."""
    try:
        call()
    except redis.exceptions.NoPermissionError:
        return True
    except OperationalError as error:
        return "no permissions" in str(error)
    return False


def test_a_host_takes_jobs_from_its_own_queue_and_can_put_one_back(site, lab_a):
    site.lpush("gpu.h200", "job-1", "job-2")
    assert lab_a.brpop(["gpu.h200"], timeout=1) == (b"gpu.h200", b"job-1")
    lab_a.rpush("gpu.h200", "job-1")  # kombu restoring a message its worker did not finish
    assert site.lrange("gpu.h200", 0, -1) == [b"job-2", b"job-1"]
    # The other hosts of its kind wait on the same queue: it may not empty or trim it.
    assert refused(lambda: lab_a.delete("gpu.h200"))
    assert refused(lambda: lab_a.ltrim("gpu.h200", 0, 0))


def test_a_host_can_send_to_db_but_never_read_or_take_what_is_there(site, lab_a):
    assert lab_a.lpush(DB_QUEUE, "a result") == 1
    for read in (
        lambda: lab_a.lrange(DB_QUEUE, 0, -1),
        lambda: lab_a.llen(DB_QUEUE),
        lambda: lab_a.lpop(DB_QUEUE),
        lambda: lab_a.rpop(DB_QUEUE),
        lambda: lab_a.brpop([DB_QUEUE], timeout=1),
        lambda: lab_a.lmove(DB_QUEUE, "gpu.h200"),
        # Nor empty, trim, thin or expire it: others' results wait there.
        lambda: lab_a.delete(DB_QUEUE),
        lambda: lab_a.ltrim(DB_QUEUE, 0, 0),
        lambda: lab_a.lrem(DB_QUEUE, 0, "a result"),
        lambda: lab_a.lset(DB_QUEUE, 0, "another result"),
        lambda: lab_a.expire(DB_QUEUE, 1),
        lambda: lab_a.rename(DB_QUEUE, "mine"),
    ):
        assert refused(read)
    assert site.lrange(DB_QUEUE, 0, -1) == [b"a result"]


def test_a_host_reaches_no_other_kinds_queue_nor_the_sites_nor_anyones_unacked_messages(
    site, lab_a
):
    site.lpush("gpu.h200-x2", "theirs")
    site.hset("unacked.lab-b", "tag", "theirs")
    for key in ("gpu.h200-x2", SITE_QUEUE, "unacked", "unacked_index", "unacked.lab-b"):
        assert refused(lambda key=key: lab_a.type(key)), key
    assert refused(lambda: lab_a.lpush(SITE_QUEUE, "a reconcile"))
    assert refused(lambda: lab_a.hgetall("unacked.lab-b"))
    assert refused(lambda: lab_a.sadd("_kombu.binding.db", "db\x06\x16\x06\x16gpu.h200"))
    # Its own unacknowledged messages it keeps under keys of its own.
    lab_a.hset("unacked.lab-a", "tag", "mine")
    assert lab_a.hget("unacked.lab-a", "tag") == b"mine"


def test_a_host_hears_the_control_channel_but_can_broadcast_nothing(broker, lab_a):
    listener = lab_a.pubsub()
    listener.psubscribe("/0.celery.pidbox")  # revokes and the reconciler's questions
    assert listener.get_message(timeout=1)["type"] == "psubscribe"
    assert refused(lambda: lab_a.publish("/0.celery.pidbox", "shutdown"))
    assert refused(lambda: lab_a.publish("/0.celeryev/worker.heartbeat", "{}"))
    with celery_broker(broker.url_for("lab-a", "pw-a")):
        assert refused(lambda: app.control.shutdown())
    listener.close()


def test_a_host_runs_no_dangerous_command_and_stays_in_its_database(lab_a):
    for call in (
        lab_a.flushall,
        lambda: lab_a.keys("*"),
        lambda: lab_a.config_get("*"),
        lambda: lab_a.acl_list(),  # every user's rule and password hash
        lambda: lab_a.execute_command("SHUTDOWN", "NOSAVE"),
        lambda: lab_a.client_kill_filter(_type="normal"),
        lambda: lab_a.execute_command("SELECT", 1),
    ):
        assert refused(call)


def test_a_gpu_host_worker_sends_its_messages_back_under_its_acl(broker, site, settings):
    settings.SPECBOARD_HOST_NAME, settings.SPECBOARD_HOST_KEY = "lab-a", signing.new_key()
    with celery_broker(broker.url_for("lab-a", "pw-a")):
        dispatch.send_progress(job_id=1, delivery="d", progress={"phase": "started"})
    (raw,) = site.lrange(DB_QUEUE, 0, -1)
    assert json.loads(raw)["headers"]["task"] == RECORD_PROGRESS
    # What Celery writes by default (no eta, no time limit, empty embed) passes the transport.
    assert message_refusal(json.loads(raw), HOST_TASKS) is None


def test_the_rule_names_exact_keys_so_a_kind_whose_name_extends_another_is_apart():
    rule = host_acl_rule(host_name="lab-a", hardware_slug="h200", password="secret")
    assert "~gpu.h200 " in rule and "~gpu.h200*" not in rule
    assert "secret" not in rule and "&/0.celery.pidbox" in rule


def test_the_example_acl_file_is_what_the_rules_give():
    lines = EXAMPLE_ACL.read_text().splitlines()
    assert lines == [
        *site_acl_rules(password="change-me"),
        host_acl_rule(host_name="lab-a", hardware_slug="h200-141gb", password="change-me"),
    ]


@pytest.fixture
def documented_broker(tmp_path) -> Iterator[PrivateRedis]:
    """A redis-server started with examples/redis-users.acl as it is (docs/SECURITY.md)."""
    server = PrivateRedis(tmp_path, acl_rules=EXAMPLE_ACL.read_text().splitlines())
    server.start()
    yield server
    server.stop()


def test_a_client_with_no_credentials_can_do_nothing_on_the_documented_broker(documented_broker):
    site = redis.Redis.from_url(documented_broker.url_for("specboard", "change-me"))
    site.lpush(DB_QUEUE, "a result")
    # What `redis-cli -p PORT COMMAND` sends: the command itself, no HELLO, no AUTH.
    anonymous = redis.Redis.from_url(documented_broker.url, protocol=2)
    for command in (
        ["PING"],
        ["LRANGE", DB_QUEUE, "0", "-1"],
        ["BRPOP", "gpu.h200-141gb", "1"],
        ["LPUSH", DB_QUEUE, "junk"],
        ["SCAN", "0"],
        ["RANDOMKEY"],
        ["KEYS", "*"],
        ["ACL", "LIST"],
        ["CONFIG", "GET", "*"],
        ["PUBLISH", "/0.celery.pidbox", "shutdown"],
        ["SUBSCRIBE", "/0.celery.pidbox"],
        ["FLUSHALL"],
        ["SHUTDOWN", "NOSAVE"],
    ):
        with pytest.raises(redis.exceptions.AuthenticationError, match=REQUIRED):
            anonymous.execute_command(*command)
    # Naming `default` with any password is no way in either.
    for password in ("", "change-me", "nopass"):
        with pytest.raises(redis.exceptions.AuthenticationError):
            redis.Redis.from_url(documented_broker.url_for("default", password)).ping()
    # Nor is Celery's broadcast (the one that shut a GPU worker down).
    with celery_broker(documented_broker.url), pytest.raises(OperationalError, match=REQUIRED):
        app.control.shutdown()
    assert site.lrange(DB_QUEUE, 0, -1) == [b"a result"] and site.ping()
    lab_a = redis.Redis.from_url(documented_broker.url_for("lab-a", "change-me"))
    assert lab_a.lpush(DB_QUEUE, "its result") == 2


def test_a_host_cannot_learn_the_names_of_keys_it_may_not_touch(broker, site, lab_a):
    site.lpush("gpu.h200-x2", "theirs")
    site.hset("unacked.lab-b", "tag", "theirs")
    for command in (["SCAN", "0"], ["RANDOMKEY"], ["KEYS", "*"], ["CLIENT", "TRACKING", "ON"]):
        assert refused(lambda command=command: lab_a.execute_command(*command)), command


def test_the_reconciler_reads_each_hosts_unacked_messages_and_the_reports_on_db(broker, site):
    from leaderboard.messaging.broker import broker_holdings, forget_unacked

    benchmark = json.loads(task_message(RUN_BENCHMARK, {"job_id": 3}))
    site.hset("unacked.lab-a", "tag-3", json.dumps([benchmark, "", "gpu.h200"]))
    site.zadd("unacked.lab-a.index", {"tag-3": 1.0})
    site.lpush(DB_QUEUE, "not-json", task_message(RECORD_PROGRESS, {"job_id": 7}))
    # Documents nested past the recursion limit, as a host may push them (issue 43).
    nested = "[" * 3000 + "]" * 3000
    site.lpush(DB_QUEUE, nested, envelope(nested, task=RECORD_PROGRESS, id="t-9"))
    # A result the db worker retries after a database error waits on site.
    site.lpush(SITE_QUEUE, task_message(RECORD_RESULT, {"job_id": 8}))

    with celery_broker(broker.url):
        holdings = broker_holdings(["gpu.h200"], hosts=["lab-a", "lab-b"])
        assert holdings.unacked == {"t-1": ("lab-a", "tag-3")}
        assert holdings.reporting_job_ids == {7, 8} and holdings.finishing_job_ids == {8}
        forget_unacked([holdings.unacked["t-1"]])
    assert not site.exists("unacked.lab-a", "unacked.lab-a.index")


def test_a_worker_on_db_takes_no_remote_control_and_a_gpu_worker_keeps_its_own_unacked_keys(
    settings,
):
    from types import SimpleNamespace

    from leaderboard.messaging.celery import configure_worker

    conf = SimpleNamespace(worker_enable_remote_control=True, broker_transport_options={})
    configure_worker(conf=conf, options={"queues": ["db", "site"]})
    assert conf.worker_enable_remote_control is False

    settings.ROLE, settings.SPECBOARD_HOST_NAME = "gpu-worker", "lab-a"
    conf = SimpleNamespace(worker_enable_remote_control=True, broker_transport_options={"x": 1})
    configure_worker(conf=conf, options={"queues": "gpu.h200"})
    assert conf.worker_enable_remote_control is True  # it must still hear revokes
    assert conf.broker_transport_options["unacked_key"] == "unacked.lab-a"
    assert conf.broker_transport_options["x"] == 1 and conf.control_queue_expires is None


def test_compose_starts_the_broker_with_no_anonymous_user_and_a_memory_bound(tmp_path):
    """The compose redis service's own command, as its shell runs it (compose turns $$ into $),
    on a free port and this test's folder: the site's processes reach it as `specboard` with
    REDIS_PASSWORD, a host as the user of its line in REDIS_HOSTS_ACL, a client with no
    credentials not at all."""
    services = yaml.safe_load((REPOSITORY / "docker-compose.yml").read_text())["services"]
    redis_service = services["redis"]
    assert redis_service["entrypoint"] == ["sh", "-c"]
    hosts = tmp_path / "hosts.acl"
    hosts.write_text(host_acl_rule(host_name="lab-a", hardware_slug="h200", password="pw-a") + "\n")
    port = free_port()
    script = (
        redis_service["command"][0]
        .replace("$$", "$")
        .replace("/etc/specboard/hosts.acl", str(hosts))
        .replace("/data", str(tmp_path))
        .replace("exec redis-server", f"exec redis-server --port {port} --bind 127.0.0.1")
        .replace("--appendonly yes", f"--appendonly no --dir {tmp_path}")
    )
    environment = {
        "PATH": os.environ["PATH"],
        "REDIS_PASSWORD": "s3cret",
        "REDIS_MAXMEMORY": "64mb",
    }
    server = subprocess.Popen(["sh", "-c", script], env=environment, stdout=subprocess.DEVNULL)
    try:
        site = redis.Redis(port=port, username="specboard", password="s3cret")
        deadline = time.monotonic() + 10
        while not (tmp_path / "users.acl").exists() or not _answers(site):
            assert time.monotonic() < deadline and server.poll() is None, "redis did not start"
            time.sleep(0.05)
        anonymous = redis.Redis(port=port, protocol=2)
        with pytest.raises(redis.exceptions.AuthenticationError, match=REQUIRED):
            anonymous.lpush(DB_QUEUE, "junk")
        assert redis.Redis(port=port, username="lab-a", password="pw-a").lpush(DB_QUEUE, "x") == 1
        assert site.config_get("maxmemory") == {"maxmemory": str(64 * 1024 * 1024)}
        assert site.config_get("maxmemory-policy") == {"maxmemory-policy": "volatile-lru"}
        written = (tmp_path / "users.acl").read_text().splitlines()
        assert written[:2] == site_acl_rules(password="s3cret")
    finally:
        server.kill()
        server.wait(timeout=10)
    # The site's processes reach it by that user, in their URLs; a GPU worker by its host's own.
    web = services["web"]["environment"]
    for url in (web["CELERY_BROKER_URL"], web["CACHE_URL"]):
        assert url.startswith("redis://specboard:${REDIS_PASSWORD:?"), url
    assert services["worker-gpu"]["environment"]["CELERY_BROKER_URL"].startswith(
        "${GPU_BROKER_URL:?"
    )


def _answers(client: redis.Redis) -> bool:
    try:
        return client.ping()
    except redis.ConnectionError:
        return False


def test_the_reconcilers_question_survives_whatever_a_host_pushes_into_its_reply_queue(
    broker, site, lab_a, caplog
):
    """A host hears the site's question (`inspect().active()`) with its ticket and reply queue,
    and may push to that queue: documents nested too deep, bodies of any shape. The reconciler
    still reads the honest answer that follows."""
    from leaderboard.messaging.broker import active_task_ids

    nested = "[" * 3000 + "]" * 3000
    answered = threading.Event()

    def answer_as_lab_a() -> None:
        listener = lab_a.pubsub()
        listener.psubscribe("/0.celery.pidbox")
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                event = listener.get_message(timeout=0.5)
                if event is None or event["type"] != "pmessage":
                    continue
                request = json.loads(base64.b64decode(json.loads(event["data"])["body"]))
                queue = f"{request['reply_to']['routing_key']}.reply.celery.pidbox"
                ticket = request["ticket"]
                for message in (
                    nested,
                    envelope(nested, ticket=ticket),
                    envelope("[1, 2]", ticket=ticket),
                    envelope(json.dumps({"gpu@lab-b": 5}), ticket=ticket),
                    envelope(json.dumps({"gpu@lab-c": [1, {"id": 5}]}), ticket=ticket),
                    envelope(json.dumps({"gpu@lab-a": [{"id": "task-7"}]}), ticket=ticket),
                ):
                    lab_a.lpush(queue, message)
                answered.set()
                return
        finally:
            listener.close()

    host = threading.Thread(target=answer_as_lab_a)
    with celery_broker(broker.url):
        host.start()
        time.sleep(0.3)  # subscribed before the site asks
        assert active_task_ids(timeout_s=2.0) == {"task-7"}
    host.join(timeout=10)
    assert answered.is_set()
    drops = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(drops) == 3, drops
    assert "maximum recursion depth" in drops[0]
    assert "its body does not decode (RecursionError)" in drops[1]
    assert "its body is not an object" in drops[2]
