"""One command for a fresh machine: database, demo models, llama-server, workers and the web
server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from leaderboard import services
from leaderboard.messaging.workers import db_worker_argv, gpu_worker_argv, gpu_worker_name
from runner.engines.build import locate
from runner.errors import RunnerError


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@dataclass(frozen=True)
class _Member:
    """One process of the stack, named, with the log file its output goes to."""

    name: str
    process: subprocess.Popen
    log: Path


def _start(name: str, argv: list[str], *, env: dict[str, str], logs: Path) -> _Member:
    log = logs / f"{name}.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            argv, env=env, cwd=settings.BASE_DIR, stdout=output, stderr=subprocess.STDOUT
        )
    return _Member(name, process, log)


def _wait_for_port(addrport: str, members: list[_Member], timeout_s: float = 60) -> None:
    """Return once the web server accepts connections (or a process died, or time ran out)."""
    host, _, port = addrport.rpartition(":")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and all(m.process.poll() is None for m in members):
        try:
            socket.create_connection((host or "127.0.0.1", int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.25)


def _demo_password() -> str:
    """The demo user's password, as seed_demo sets it."""
    return os.environ.get("SPECBOARD_DEMO_PASSWORD", "specboard-demo")


def _tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


class Command(BaseCommand):
    help = (
        "Migrate, build (or reuse) llama-server, start a db worker, a GPU worker and the web "
        "server, register the demo models (the real Gemma 3 270M and the tiny test models) and "
        "queue the demo benchmark, then run until interrupted."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument(
            "--skip-engine", action="store_true", help="Let the first job build llama-server."
        )
        parser.add_argument(
            "--no-seed",
            action="store_true",
            help="Do not register demo models or queue a demo job.",
        )

    def handle(self, *args, **options) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        if not settings.DEBUG:
            call_command("collectstatic", interactive=False, verbosity=0)
        if not options["skip_engine"]:
            self._locate_engine()
        # Every process must use the broker this one chose, even if Redis comes or goes meanwhile.
        env = os.environ | {"CELERY_BROKER_URL": settings.CELERY_BROKER_URL}
        # Each process writes to its own log file, so that the start-up ends with the address
        # and the sign-in rather than with the workers' banners.
        logs = settings.VAR_DIR / "log"
        logs.mkdir(parents=True, exist_ok=True)
        web = [sys.executable, "manage.py", "runserver", options["addrport"], "--noreload"]
        # The web server first: its pages answer while the demo models are placed and registered
        # (the real model's header takes seconds to read) and while the demo's jobs run.
        members = [_start("web", web, env=env, logs=logs)]
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            if not options["no_seed"]:
                call_command("seed_demo")
            members += _start_workers(env=env, logs=logs)
            _wait_for_port(options["addrport"], members)
            self._announce(options["addrport"], members)
            while not (exited := [m for m in members if m.process.poll() is not None]):
                time.sleep(1)
            raise CommandError(
                f"the {exited[0].name} process exited; stopping the others. "
                f"The end of {exited[0].log}:\n{_tail(exited[0].log)}"
            )
        except KeyboardInterrupt:
            pass
        finally:
            _stop(members)

    def _locate_engine(self) -> None:
        self.stdout.write("locating llama-server (the first build takes several minutes)…")
        try:
            engine = locate(log=self.stdout.write)
        except RunnerError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"llama-server {engine.release} ({engine.backend}): {engine.server_path}")

    def _announce(self, addrport: str, members: list[_Member]) -> None:
        """Where the logs are, the address and the sign-in: the start-up's last lines."""
        broker = settings.CELERY_BROKER_URL.split("@")[-1]
        self.stdout.write(
            "logs: "
            + ", ".join(os.path.relpath(member.log, settings.BASE_DIR) for member in members)
            + f" (broker {broker}); Ctrl-C stops everything."
        )
        self.stdout.write(self.style.SUCCESS(f"Specboard on http://{addrport}/"))
        self.stdout.write(self.style.SUCCESS(f"Sign in as demo / {_demo_password()} to submit."))


def _start_workers(*, env: dict[str, str], logs: Path) -> list[_Member]:
    """A db worker with beat embedded and a GPU worker that is a registered host like any other:
    it signs what it sends back (its hardware row is the one seed_demo registers)."""
    host, key = services.ensure_gpu_host(
        name="local-gpu-worker", hardware_slug=settings.SPECBOARD_HARDWARE_SLUG
    )
    gpu_env = env | {
        "SPECBOARD_ROLE": "gpu-worker",
        "SPECBOARD_HOST_NAME": host.name,
        "SPECBOARD_HOST_KEY": key,
    }
    # Beat embedded: the reconciler and the sweeper run on the db worker's schedule.
    db_worker = db_worker_argv(beat_schedule=str(settings.VAR_DIR / "celerybeat-schedule"))
    # Named for its host (this process has no SPECBOARD_HOST_NAME), so /hosts/ shows it online
    # while it idles.
    gpu_worker = gpu_worker_argv(
        hardware_slug=settings.SPECBOARD_HARDWARE_SLUG, hostname=gpu_worker_name(host.name)
    )
    return [
        _start("db-worker", db_worker, env=env, logs=logs),
        _start("gpu-worker", gpu_worker, env=gpu_env, logs=logs),
    ]


def _stop(members: list[_Member]) -> None:
    """SIGTERM to every process still running, then up to 20 s each before SIGKILL."""
    for member in members:
        if member.process.poll() is None:
            member.process.send_signal(signal.SIGTERM)
    for member in members:
        try:
            member.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            member.process.kill()
