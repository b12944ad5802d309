"""Inject faults into a real stack again and again, and count the jobs lost or recorded twice.

A private redis-server, a PostgreSQL database of its own (dropped and created), a db worker
running beat (reconciler and sweeper every 2 s), a GPU worker on a real llama-server and the
runner's tiny models. Faults: the GPU worker SIGKILLed mid-run (--kills), llama-server killed
mid-request (--engine-kills), Redis restarted with jobs queued (--redis-restarts). Each fault
has jobs in flight; at the end every job must have finished, succeeded or failed with a reason.

    .venv/bin/python bench/faults.py                 # 20 worker kills, 5 engine kills, 3 restarts
    .venv/bin/python bench/faults.py --kills 3 --engine-kills 1 --redis-restarts 1
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))
PERIODIC_S = 2
QUICK = {
    "target_model": "tiny-qwen3.gguf",
    "threads": 2,
    "protocol": {"name": "quick", "n_predict": 16, "runs": 2, "warmup": 0},
}


def long_job(runs: int, tokens: int = 256) -> dict:
    return QUICK | {"protocol": {"name": "quick", "n_predict": tokens, "runs": runs, "warmup": 0}}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fresh_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


class Redis:
    def __init__(self, directory: str) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.directory = directory
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "no", "--dir", self.directory],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        for _ in range(200):
            try:
                client.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


class Workers:
    def __init__(
        self, environment: dict, hardware_slug: str, beat: str, gpu_environment: dict
    ) -> None:
        self.environment = environment
        # The GPU worker is a registered host: it signs what it sends back.
        self.gpu_environment = gpu_environment
        self.hardware_slug = hardware_slug
        self.beat = beat
        self.all: list[subprocess.Popen] = []
        self.gpu: subprocess.Popen | None = None

    def _start(self, argv: list[str], environment: dict) -> subprocess.Popen:
        process = subprocess.Popen(argv, env=environment, cwd=REPOSITORY)
        self.all.append(process)
        return process

    def start_db(self) -> None:
        from leaderboard.messaging.workers import db_worker_argv

        self._start(
            db_worker_argv(
                beat_schedule=self.beat,
                hostname=f"db-{uuid.uuid4().hex[:6]}@%h",
                loglevel="ERROR",
                quiet=True,
            ),
            self.environment,
        )

    def start_gpu(self) -> None:
        from leaderboard.messaging.workers import gpu_worker_argv

        self.gpu = self._start(
            gpu_worker_argv(
                hardware_slug=self.hardware_slug,
                hostname=f"gpu-{uuid.uuid4().hex[:6]}@%h",
                loglevel="ERROR",
            ),
            self.environment | {"SPECBOARD_ROLE": "gpu-worker"} | self.gpu_environment,
        )

    def engines(self) -> list:
        import psutil

        if self.gpu is None:
            return []
        try:
            children = psutil.Process(self.gpu.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        return [child for child in children if "llama-server" in child.name()]

    def kill_gpu(self) -> None:
        engines = self.engines()
        self.gpu.send_signal(signal.SIGKILL)
        self.gpu.wait(timeout=10)
        # A GPU host's supervisor reaps the orphaned llama-server; here we do.
        for engine in engines:
            engine.kill()

    def stop(self) -> None:
        for process in self.all:
            if process.poll() is None:
                process.terminate()
        for process in self.all:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def wait_until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20, help="GPU worker SIGKILLs mid-run")
    parser.add_argument("--engine-kills", type=int, default=5, help="llama-server kills")
    parser.add_argument("--redis-restarts", type=int, default=3, help="Redis restarts")
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/specboard_bench_faults"
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait at the end")
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        parser.error("redis-server is not installed")

    scratch = tempfile.mkdtemp(prefix="specboard-faults-")
    from runner.gguf.tiny_models import write_fixtures

    models_dir = next(iter(write_fixtures(Path(scratch) / "models").values())).parent
    fresh_database(args.database_url)
    broker = Redis(scratch)
    broker.start()
    atexit.register(broker.stop)
    # A SIGTERM must still stop the workers and Redis this script started.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1))
    environment = os.environ | {
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
        "DATABASE_URL": args.database_url,
        "CELERY_BROKER_URL": broker.url,
        "SPECBOARD_MODELS_DIR": str(models_dir),
        "SECRET_KEY": "faults-bench",
        "SPECBOARD_RECONCILE_EVERY_S": str(PERIODIC_S),
        "SPECBOARD_SWEEP_EVERY_S": str(PERIODIC_S),
        "LOG_LEVEL": "ERROR",
        # The bench submits far more than a user's hourly allowance, on purpose.
        "SPECBOARD_SUBMISSION_RATE": "100000/hour",
        "SPECBOARD_DAILY_TOKENS": str(10**12),
    }
    os.environ.update(environment)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from leaderboard import services
    from leaderboard.models import Job, Run
    from runner.engines.build import locate
    from runner.provenance import cpu_name

    call_command("migrate", verbosity=0)
    locate()
    owner = get_user_model().objects.create_user(username="faults")
    services.register_model(path="tiny-qwen3.gguf")
    hardware = services.register_hardware(
        gpu_name="CPU faults bench", slug="faults-bench", cpu_model=cpu_name()
    )
    host, key = services.ensure_gpu_host(name="faults-bench", hardware_slug=hardware.slug)
    gpu_environment = {"SPECBOARD_HOST_NAME": host.name, "SPECBOARD_HOST_KEY": key}
    workers = Workers(environment, hardware.slug, str(Path(scratch) / "beat"), gpu_environment)
    jobs: list[int] = []
    faults = {"worker SIGKILL": 0, "llama-server kill": 0, "redis restart": 0}

    def submit(config: dict) -> Job:
        job = services.submit_config(owner=owner, data=config, hardware_slug=hardware.slug)
        jobs.append(job.pk)
        return job

    def measuring(job: Job) -> Callable[[], bool]:
        return lambda: Job.objects.get(pk=job.pk).progress.get("done", 0) >= 1

    atexit.register(workers.stop)
    try:
        workers.start_db()
        workers.start_gpu()
        for index in range(args.kills):
            # Distinct protocols, so each job is a config of its own, plus one short job behind it.
            victim = submit(long_job(runs=4, tokens=200 + index))
            submit(QUICK | {"protocol": QUICK["protocol"] | {"n_predict": 8 + index}})
            if wait_until(measuring(victim), 120):
                workers.kill_gpu()
                faults["worker SIGKILL"] += 1
                workers.start_gpu()
            print(f"worker kill {index + 1}/{args.kills}", file=sys.stderr, flush=True)
        for index in range(args.engine_kills):
            victim = submit(long_job(runs=200, tokens=512 + index))
            submit(QUICK | {"protocol": QUICK["protocol"] | {"n_predict": 40 + index}})
            if wait_until(measuring(victim), 120):
                for engine in workers.engines():
                    engine.kill()
                faults["llama-server kill"] += 1
        for index in range(args.redis_restarts):
            for n in range(3):
                submit(QUICK | {"protocol": QUICK["protocol"] | {"n_predict": 60 + 3 * index + n}})
            broker.stop()
            broker.start()
            faults["redis restart"] += 1
        wait_until(lambda: not Job.objects.filter(status__in=Job.ACTIVE).exists(), args.timeout)
    finally:
        workers.stop()
        broker.stop()

    rows = Job.objects.filter(pk__in=jobs)
    succeeded = rows.filter(status=Job.Status.SUCCEEDED).count()
    failed = rows.filter(status=Job.Status.FAILED).exclude(error="").count()
    lost = len(jobs) - succeeded - failed
    runs_per_job = Run.objects.filter(job__in=jobs).count()
    duplicates = runs_per_job - succeeded + Run.objects.filter(job__isnull=True).count()
    attempts = sum(rows.values_list("attempts", flat=True))
    engine_failures = rows.filter(error__startswith="engine crashed").count()
    shutil.rmtree(scratch, ignore_errors=True)

    print(
        f"faults injected: {sum(faults.values())} ({', '.join(f'{v} {k}' for k, v in faults.items())})"
    )
    print(f"jobs submitted: {len(jobs)}")
    print(
        f"jobs finished: {succeeded + failed} ({succeeded} succeeded, {failed} failed with a reason, {engine_failures} of them 'engine crashed')"
    )
    print(f"attempts (claims) in all: {attempts}")
    print(f"jobs lost: {lost}")
    print(f"duplicates: {duplicates}")
    print(f"duplicates={duplicates}")
    print(f"jobs_lost={lost}")
    return 0 if lost == 0 and duplicates == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
