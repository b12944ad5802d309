"""A GPU host against the real db worker, on a private redis-server started with the host's ACL
(leaderboard.messaging.broker.host_acl_rule): what issue 23 found a host could do, and what it must
still do. The host tries to make the db worker run a benchmark that reaches the Hub with the site's
token, to read and take the db queue, to stop the db worker with a broadcast and to crash it
with a message that is not JSON; then it sends its own job's signed "started" event, which the
db worker must still record."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from celery import signature
from celery.exceptions import Retry
from django.db import OperationalError

from leaderboard import services, tasks
from leaderboard.messaging import dispatch
from leaderboard.messaging.broker import host_acl_rule
from leaderboard.messaging.celery import DB_QUEUE, RECORD_PROGRESS, RUN_BENCHMARK, SITE_QUEUE, app
from leaderboard.messaging.workers import db_worker_argv
from leaderboard.models import Job
from tests.support.brokers import PrivateRedis, celery_broker, database_url
from tests.support.hub_server import HubServer

pytestmark = [pytest.mark.e2e]

REPOSITORY = Path(__file__).resolve().parents[2]
CONFIG = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 8}}
PASSWORD = "lab-a-broker-password"
MAX_MESSAGE_BYTES = 256 * 1024


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        yield server


@pytest.fixture
def broker(tmp_path: Path, hardware) -> Iterator[PrivateRedis]:
    rule = host_acl_rule(host_name="lab-a", hardware_slug=hardware.slug, password=PASSWORD)
    server = PrivateRedis(tmp_path, acl_rules=[rule])
    server.start()
    yield server
    server.stop()


class DbWorker:
    """The db worker as docker-compose runs it (`python -m leaderboard.messaging.workers db`), its
    output in a file."""

    def __init__(self, broker: PrivateRedis, hub: HubServer, directory: Path) -> None:
        self.log = directory / "db-worker.log"
        environment = os.environ | {
            "CELERY_BROKER_URL": broker.url,
            "DATABASE_URL": database_url(),
            "SECRET_KEY": "broker-acl-test",
            # What a benchmark run on the db worker would reach the Hub with.
            "SPECBOARD_HF_ENDPOINT": hub.endpoint,
            "SPECBOARD_HF_TOKEN": "the-sites-own-token",
            "SPECBOARD_MODEL_CACHE_DIR": str(directory / "cache"),
            # Small enough that a test can send a message past it.
            "SPECBOARD_MAX_BROKER_MESSAGE_BYTES": str(MAX_MESSAGE_BYTES),
        }
        with self.log.open("wb") as output:
            self.process = subprocess.Popen(
                db_worker_argv(hostname="db@site", loglevel="INFO"),
                env=environment,
                cwd=REPOSITORY,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        wait_until(lambda: " ready." in self.output(), 60, "the db worker to start")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()


@pytest.fixture
def db_worker(broker, hub, tmp_path, transactional_db) -> Iterator[DbWorker]:
    worker = DbWorker(broker, hub, tmp_path)
    yield worker
    worker.stop()


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s} s"
        time.sleep(0.2)


def refused(call) -> bool:
    """Whether Redis refused the call for want of permission (kombu says so in its own error)."""
    try:
        call()
    except Exception as error:
        return "no permissions" in str(error)
    return False


def test_a_gpu_host_can_send_back_only_its_own_jobs_messages_to_the_db_worker(
    db_worker, broker, hub, hardware, user, models, settings
):
    host, key = services.register_gpu_host(name="lab-a", hardware_slug=hardware.slug)
    with celery_broker(broker.url):  # its job message waits on the kind's queue, unconsumed
        job = services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)
    as_host = broker.url_for("lab-a", PASSWORD)
    lab_a = redis.Redis.from_url(as_host)

    with celery_broker(as_host):
        # A benchmark for a repository of the host's choosing, on the db worker's queue.
        hub_model = {"path": "x.gguf", "sha256": "0" * 64, "size_bytes": 1}
        hub_model |= {"hf_repo": "attacker/repo", "hf_file": "x.gguf", "hf_revision": "main"}
        app.send_task(
            RUN_BENCHMARK,
            kwargs={"job_id": job.pk, "config": CONFIG, "models": {"target": hub_model}},
            queue=DB_QUEUE,
            declare=[],
        )
        # Stop the db worker with a broadcast: Redis refuses the host's.
        assert refused(lambda: app.control.shutdown())
    # Read or take what waits on db.
    assert refused(lambda: lab_a.lrange(DB_QUEUE, 0, -1))
    assert refused(lambda: lab_a.brpop([DB_QUEUE], timeout=1))
    # Even a broadcast that got through (the site's own user sends it here) moves it not.
    with celery_broker(broker.url):
        app.control.shutdown(destination=["db@site"])
    # Crash it with one message that is not JSON.
    lab_a.lpush(DB_QUEUE, "not-json")

    # The host's own job: its signed "started" event, for the delivery the site sent it.
    settings.SPECBOARD_HOST_NAME, settings.SPECBOARD_HOST_KEY = host.name, key
    with celery_broker(as_host):
        dispatch.send_progress(
            job_id=job.pk,
            delivery=Job.objects.get(pk=job.pk).delivery,
            progress={"phase": "started"},
        )
    wait_until(
        lambda: Job.objects.filter(pk=job.pk, host=host, status=Job.Status.RUNNING).exists(),
        60,
        "the db worker to record the host's claim",
    )

    output = db_worker.output()
    assert db_worker.process.poll() is None, output
    assert "Unrecoverable error" not in output
    assert f"dropped a message on queue 'db': task '{RUN_BENCHMARK}' does not belong" in output
    assert "dropped a broker message that does not decode: 'not-json'" in output
    assert hub.requests == [], "the db worker reached the Hub"


def raw_message(
    kwargs: dict | None = None,
    *,
    body: str | None = None,
    headers: dict | None = None,
    embed: dict | None = None,
) -> str:
    """A `record_progress_task` message as kombu's Redis transport stores it, with what a host
    may add: headers, embedded steps, or a body of its own (JSON text)."""
    if body is None:
        body = json.dumps([[], kwargs or {}, {"callbacks": None, "errbacks": None} | (embed or {})])
    return json.dumps(
        {
            "body": base64.b64encode(body.encode()).decode(),
            "content-encoding": "utf-8",
            "content-type": "application/json",
            "headers": {"task": RECORD_PROGRESS, "id": str(uuid.uuid4()), "lang": "py"}
            | (headers or {}),
            "properties": {"body_encoding": "base64", "delivery_tag": "t", "priority": 0},
        }
    )


def test_the_db_worker_drops_what_would_crash_or_steer_it_and_records_the_next_honest_message(
    db_worker, broker, hub, hardware, user, models, settings
):
    """Issue 43: a 6 KB message ended the db worker (RecursionError), a `link` made it publish a
    benchmark on another kind's queue with the site's rights, an `eta` a year ahead was held in
    its memory, a `timelimit` killed a pool process. Each is now dropped and logged, and the
    host's honest "started" that follows is recorded."""
    host, key = services.register_gpu_host(name="lab-a", hardware_slug=hardware.slug)
    with celery_broker(broker.url):
        job = services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)
    as_host = broker.url_for("lab-a", PASSWORD)
    lab_a, site = redis.Redis.from_url(as_host), redis.Redis.from_url(broker.url)
    progress = {"job_id": job.pk, "delivery": "d", "progress": {"phase": "started"}}
    nested = "[" * 3000 + "]" * 3000
    deep = {"job_id": job.pk, "progress": json.loads("[" * 100 + "]" * 100)}
    year_ahead = (datetime.now(UTC) + timedelta(days=365)).isoformat()
    benchmark = {"task": RUN_BENCHMARK, "kwargs": {"job_id": job.pk}}
    benchmark["options"] = {"queue": "gpu.another-kind"}
    hostile = {
        nested: "does not decode: 'maximum recursion depth exceeded",
        raw_message(body=nested): "its body does not decode (RecursionError)",
        raw_message(deep): "its body nests deeper than 32",
        raw_message(headers={"x": {"__type__": "datetime", "__value__": 5}}): "(TypeError)",
        raw_message(progress | {"padding": "x" * MAX_MESSAGE_BYTES}): "over SPECBOARD_MAX",
        raw_message(progress, embed={"callbacks": [benchmark]}): "asks for callbacks after",
        raw_message(progress, embed={"errbacks": [benchmark]}): "asks for errbacks after",
        raw_message(progress, embed={"chain": [benchmark]}): "asks for chain after",
        raw_message(progress, embed={"chord": benchmark}): "asks for chord after",
        raw_message(progress, embed={"eta": year_ahead}): "its embed names ['eta']",
        raw_message(progress, headers={"eta": year_ahead}): "it sets eta",
        raw_message(progress, headers={"countdown": 3600}): "it sets countdown",
        raw_message(progress, headers={"expires": year_ahead}): "it sets expires",
        raw_message(progress, headers={"timelimit": [1, 1]}): "it sets timelimit",
        raw_message(progress, headers={"retries": 3}): "it sets retries",
    }
    for message in hostile:
        lab_a.lpush(DB_QUEUE, message)
    # And Celery's own `link`, as a host's Celery client writes it.
    with celery_broker(as_host):
        app.send_task(
            RECORD_PROGRESS,
            kwargs=progress,
            queue=DB_QUEUE,
            declare=[],
            link=signature(RUN_BENCHMARK, kwargs={"job_id": job.pk}, queue="gpu.another-kind"),
        )

    # The host's own job: its signed "started" event, for the delivery the site sent it.
    settings.SPECBOARD_HOST_NAME, settings.SPECBOARD_HOST_KEY = host.name, key
    with celery_broker(as_host):
        dispatch.send_progress(
            job_id=job.pk,
            delivery=Job.objects.get(pk=job.pk).delivery,
            progress={"phase": "started"},
        )
    wait_until(
        lambda: Job.objects.filter(pk=job.pk, host=host, status=Job.Status.RUNNING).exists(),
        60,
        "the db worker to record the host's claim",
    )

    output = db_worker.output()
    assert db_worker.process.poll() is None, output
    assert "Unrecoverable error" not in output
    for reason in hostile.values():
        assert reason in output, (reason, output[-3000:])
    drops = [line for line in output.splitlines() if "dropped a" in line]
    assert len(drops) == len(hostile) + 1, drops
    assert "it asks for callbacks after the task" in drops[-1]
    # Nothing was sent on, held or run in the db worker's name.
    assert site.llen("gpu.another-kind") == 0 and site.llen(SITE_QUEUE) == 0
    assert site.llen(DB_QUEUE) == 0
    # Celery saw one message of all these: the honest one.
    assert len([line for line in output.splitlines() if line.endswith(" received")]) == 1, output


def test_the_db_workers_own_retry_after_a_database_error_goes_to_site_and_is_recorded(
    db_worker, broker, hardware, user, models, monkeypatch, signed_by_host
):
    """A recording that meets a database error is retried by the db worker with an eta, which
    `db` refuses (a host's eta would be held in its memory): Celery's own retry message goes to
    `site`, which only the site writes, and is recorded there."""
    with celery_broker(broker.url):
        job = services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)
    progress = {"phase": "started"}
    kwargs = {"job_id": job.pk, "progress": progress} | signed_by_host("progress", job.pk, progress)

    def database_away(**_):
        raise OperationalError("server closed the connection unexpectedly")

    # The db worker's first attempt, as it runs a message taken from `db`.
    monkeypatch.setattr(services, "record_host_message", database_away)
    task = tasks.record_progress_task
    delivery_info = {"exchange": "", "routing_key": DB_QUEUE}
    task.push_request(
        id=str(uuid.uuid4()),
        args=[],
        kwargs=kwargs,
        delivery_info=delivery_info,
        retries=0,
        called_directly=False,
    )
    try:
        with celery_broker(broker.url), pytest.raises(Retry):
            task.run(**kwargs)
    finally:
        task.pop_request()
    monkeypatch.undo()

    wait_until(
        lambda: Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).exists(),
        60,
        "the db worker to record the retried progress",
    )
    output = db_worker.output()
    assert "dropped a" not in output, output
    assert f"{RECORD_PROGRESS}[" in output and " received" in output
