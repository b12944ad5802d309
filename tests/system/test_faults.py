"""Faults with real processes: a private Redis, real Celery workers with beat, a real llama-server.

Each test starts its own redis-server on a free port (never the shared one), a db worker that
also runs beat (the reconciler and the sweeper every few seconds) and a GPU worker, then breaks
one part: the GPU worker or llama-server killed mid-run, Redis restarted, a job stuck running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import psutil
import pytest
import redis
from django.utils import timezone

from leaderboard import services
from leaderboard.messaging.workers import db_worker_argv, gpu_worker_argv
from leaderboard.models import Job, RequestRecord, Run
from runner.engines.build import locate
from runner.provenance import cpu_name
from tests.support.brokers import PrivateRedis, database_url, gpu_worker_environment

pytestmark = [pytest.mark.e2e, pytest.mark.engine]

REPOSITORY = Path(__file__).resolve().parents[2]
PERIODIC_S = 2
QUICK = {
    "target_model": "tiny-qwen3.gguf",
    "threads": 2,
    "protocol": {"name": "quick", "n_predict": 16, "runs": 2, "warmup": 0},
}


def long_baseline(runs: int, tokens: int = 512) -> dict:
    return QUICK | {"protocol": {"name": "quick", "n_predict": tokens, "runs": runs, "warmup": 0}}


@pytest.fixture
def broker(tmp_path: Path, switch_broker) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    with switch_broker(server.url):
        yield server
    server.stop()


@pytest.fixture
def hardware(transactional_db):
    return services.register_hardware(
        gpu_name="CPU faults", slug=f"faults-{uuid.uuid4().hex[:8]}", cpu_model=cpu_name()
    )


class Stack:
    """The worker processes of one test; GPU workers can be killed and started again."""

    def __init__(self, broker: PrivateRedis, models_dir: Path, hardware, beat: Path) -> None:
        self.environment = os.environ | {
            "CELERY_BROKER_URL": broker.url,
            "SPECBOARD_MODELS_DIR": str(models_dir),
            "SECRET_KEY": "faults-test",
            "SPECBOARD_RECONCILE_EVERY_S": str(PERIODIC_S),
            "SPECBOARD_SWEEP_EVERY_S": str(PERIODIC_S),
        }
        self.hardware_slug = hardware.slug
        # Every GPU worker of the stack is the same registered host (a restart, not a stranger).
        self.gpu_environment = gpu_worker_environment(hardware)
        self.beat = beat
        self.processes: list[subprocess.Popen] = []

    def _start(self, argv: list[str], environment: dict) -> subprocess.Popen:
        process = subprocess.Popen(argv, env=environment, cwd=REPOSITORY)
        self.processes.append(process)
        return process

    def start_db_worker(self, **environment: str) -> subprocess.Popen:
        return self._start(
            db_worker_argv(
                beat_schedule=str(self.beat),
                hostname=f"db-{uuid.uuid4().hex[:6]}@%h",
                loglevel="WARNING",
                quiet=True,
            ),
            self.environment | {"DATABASE_URL": database_url()} | environment,
        )

    def start_gpu_worker(self) -> subprocess.Popen:
        return self._start(
            gpu_worker_argv(
                hardware_slug=self.hardware_slug,
                hostname=f"gpu-{uuid.uuid4().hex[:6]}@%h",
                loglevel="WARNING",
            ),
            self.environment | self.gpu_environment,
        )

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture
def stack(broker, tiny_models, hardware, tmp_path) -> Iterator[Stack]:
    locate()  # builds llama-server once, or finds the cached build
    workers = Stack(
        broker,
        next(iter(tiny_models.values())).parent,
        hardware,
        tmp_path / "celerybeat-schedule",
    )
    yield workers
    workers.stop()


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            states = [(j.pk, j.status, j.attempts, j.progress, j.error) for j in Job.objects.all()]
            pytest.fail(f"{what} did not happen within {timeout_s} s: {states}")
        time.sleep(0.2)


def measuring(job: Job) -> Callable[[], bool]:
    return lambda: Job.objects.get(pk=job.pk).progress.get("done", 0) >= 1


def finished(*jobs: Job) -> Callable[[], bool]:
    return lambda: not Job.objects.filter(pk__in=[j.pk for j in jobs], status__in=Job.ACTIVE)


def llama_servers(worker: subprocess.Popen) -> list[psutil.Process]:
    return [
        child
        for child in psutil.Process(worker.pid).children(recursive=True)
        if "llama-server" in child.name()
    ]


def submit(user, hardware, config: dict) -> Job:
    return services.submit_config(owner=user, data=config, hardware_slug=hardware.slug)


def test_a_gpu_worker_killed_mid_run_has_its_job_redelivered_and_recorded_exactly_once(
    transactional_db, models, hardware, user, stack
):
    stack.start_db_worker()
    worker = stack.start_gpu_worker()
    # Long enough requests that the kill lands mid-run: with GPU-side sampling and whole
    # responses the tiny model decodes about 4,000 tok/s here, 192 tokens took 50 ms.
    job = submit(user, hardware, long_baseline(runs=5, tokens=2048))
    wait_until(measuring(job), 120, "the first measured request")

    engines = llama_servers(worker)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)
    # Nothing reaps a dead worker's llama-server on this machine; a GPU host's supervisor would.
    for engine in engines:
        engine.kill()
    stack.start_gpu_worker()

    wait_until(finished(job), 180, "the redelivered job to finish")
    job.refresh_from_db()
    assert (job.status, job.error, job.attempts) == ("succeeded", "", 2)
    assert Run.objects.filter(config=job.config).count() == 1
    assert RequestRecord.objects.filter(run__job=job).count() == 5


def test_llama_server_killed_mid_request_fails_the_job_with_its_log_tail_and_frees_the_worker(
    transactional_db, models, hardware, user, stack
):
    stack.start_db_worker()
    worker = stack.start_gpu_worker()
    doomed = submit(user, hardware, long_baseline(runs=200))
    queued_next = submit(user, hardware, QUICK)
    wait_until(measuring(doomed), 120, "the first measured request")

    killed_at = time.monotonic()
    for engine in llama_servers(worker):
        engine.kill()
    wait_until(finished(doomed), 30, "the crash to be recorded")
    recorded_after_s = time.monotonic() - killed_at

    doomed.refresh_from_db()
    assert doomed.status == Job.Status.FAILED and recorded_after_s < 10
    assert doomed.error.startswith("engine crashed") and doomed.log_tail.strip()
    wait_until(finished(queued_next), 120, "the next job")
    assert Job.objects.get(pk=queued_next.pk).status == Job.Status.SUCCEEDED


def test_jobs_queued_when_redis_restarts_are_sent_again_and_none_is_lost(
    transactional_db, models, hardware, user, stack, broker
):
    stack.start_db_worker()
    jobs = [
        submit(user, hardware, QUICK | {"protocol": QUICK["protocol"] | {"n_predict": n}})
        for n in (8, 12, 16)
    ]
    messages = redis.Redis.from_url(broker.url)
    assert messages.llen(hardware.queue_name) == 3

    broker.restart()
    assert messages.llen(hardware.queue_name) == 0
    stack.start_gpu_worker()

    wait_until(finished(*jobs), 180, "every queued job to finish")
    assert [Job.objects.get(pk=j.pk).status for j in jobs] == ["succeeded"] * 3
    assert Run.objects.count() == 3


def test_a_job_stuck_running_past_its_time_limit_is_failed_by_the_periodic_sweeper(
    transactional_db, models, hardware, user, stack
):
    # A periodic message expires after one period: keep the reconciler (which waits on worker
    # replies) out of the sweeper's way, so every sweep is executed before it expires.
    stack.start_db_worker(
        SPECBOARD_MAX_JOB_SECONDS="60",
        SPECBOARD_RECONCILE_EVERY_S="60",
        SPECBOARD_SWEEP_EVERY_S="5",
    )
    job = submit(user, hardware, QUICK)
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING, attempts=1, started_at=timezone.now() - timedelta(minutes=5)
    )

    # Generous: the db worker with beat may take a while to start on a loaded 2-core machine.
    wait_until(finished(job), 120, "the sweeper")
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.error.startswith("timed out")


def _other_backends() -> set[int]:
    """The PostgreSQL backends on this database other than the test's own: the db worker's."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        return {pid for (pid,) in cursor.fetchall()}


def test_the_db_worker_keeps_its_database_connection_and_opens_another_when_it_is_cut(
    transactional_db, models, hardware, user, stack
):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("cuts the db worker's PostgreSQL connection")
    stack.start_db_worker()
    stack.start_gpu_worker()
    first = submit(user, hardware, QUICK)
    wait_until(finished(first), 120, "the first job to finish")
    kept = _other_backends()
    second = submit(user, hardware, long_baseline(runs=2, tokens=17))
    wait_until(finished(second), 120, "the second job to finish")
    # Each message a host sent was recorded on the connection the worker already held.
    assert kept and _other_backends() == kept

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [list(kept)]
        )
    third = submit(user, hardware, long_baseline(runs=2, tokens=18))
    wait_until(finished(third), 120, "the job after the cut to finish")
    for job in (first, second, third):
        job.refresh_from_db()
        assert (job.status, job.error) == ("succeeded", "")
    assert not _other_backends() & kept
