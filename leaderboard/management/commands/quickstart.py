"""One command for a fresh machine: database, demo models, llama-server, workers and the web server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from leaderboard import services
from leaderboard.workers import db_worker_argv, gpu_worker_argv, gpu_worker_name
from runner.engines.build import locate
from runner.errors import RunnerError


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


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
            self.stdout.write("locating llama-server (the first build takes several minutes)…")
            try:
                engine = locate(log=self.stdout.write)
            except RunnerError as error:
                raise CommandError(str(error)) from None
            self.stdout.write(
                f"llama-server {engine.release} ({engine.backend}): {engine.server_path}"
            )
        # Every process must use the broker this one chose, even if Redis comes or goes meanwhile.
        env = os.environ | {"CELERY_BROKER_URL": settings.CELERY_BROKER_URL}
        web = [sys.executable, "manage.py", "runserver", options["addrport"], "--noreload"]
        # The web server first: its pages answer while the demo models are placed and registered
        # (the real model's header takes seconds to read) and while the demo's jobs run.
        processes = [subprocess.Popen(web, env=env, cwd=settings.BASE_DIR)]
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            if not options["no_seed"]:
                call_command("seed_demo")
            # The local GPU worker is a registered host like any other: it signs what it sends
            # back (its hardware row is the one seed_demo registers).
            host, key = services.ensure_gpu_host(
                name="local-gpu-worker", hardware_slug=settings.SPECBOARD_HARDWARE_SLUG
            )
            gpu_env = env | {
                "SPECBOARD_ROLE": "gpu-worker",
                "SPECBOARD_HOST_NAME": host.name,
                "SPECBOARD_HOST_KEY": key,
            }
            workers = [
                # Beat embedded: the reconciler and the sweeper run on the db worker's schedule.
                (db_worker_argv(beat_schedule=str(settings.VAR_DIR / "celerybeat-schedule")), env),
                # Named for its host (this process has no SPECBOARD_HOST_NAME), so /hosts/
                # shows it online while it idles.
                (
                    gpu_worker_argv(
                        hardware_slug=settings.SPECBOARD_HARDWARE_SLUG,
                        hostname=gpu_worker_name(host.name),
                    ),
                    gpu_env,
                ),
            ]
            processes += [
                subprocess.Popen(command, env=environment, cwd=settings.BASE_DIR)
                for command, environment in workers
            ]
            self.stdout.write(
                self.style.SUCCESS(
                    f"Specboard on http://{options['addrport']}/ (broker "
                    f"{settings.CELERY_BROKER_URL.split('@')[-1]}); sign in as demo / "
                    "specboard-demo. Ctrl-C stops everything."
                )
            )
            while all(process.poll() is None for process in processes):
                time.sleep(1)
            raise CommandError("a process of the stack exited; stopping the others")
        except KeyboardInterrupt:
            pass
        finally:
            for process in processes:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in processes:
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
