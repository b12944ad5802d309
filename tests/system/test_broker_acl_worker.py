"""A GPU host against the real db worker, on a private redis-server started with the host's ACL
(leaderboard.broker.host_acl_rule): what issue 23 found a host could do, and what it must still
do. The host tries to make the db worker run a benchmark that reaches the Hub with the site's
token, to read and take the db queue, to stop the db worker with a broadcast and to crash it
with a message that is not JSON; then it sends its own job's signed "started" event, which the
db worker must still record."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from leaderboard import dispatch, services
from leaderboard.broker import host_acl_rule
from leaderboard.celery import DB_QUEUE, RUN_BENCHMARK, app
from leaderboard.models import Job
from leaderboard.workers import db_worker_argv
from tests.support.brokers import PrivateRedis, celery_broker, database_url
from tests.support.hub_server import HubServer

pytestmark = [pytest.mark.e2e]

REPOSITORY = Path(__file__).resolve().parents[2]
CONFIG = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 8}}
PASSWORD = "lab-a-broker-password"


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
    """The db worker as docker-compose runs it (`python -m leaderboard.workers db`), its output
    in a file."""

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
