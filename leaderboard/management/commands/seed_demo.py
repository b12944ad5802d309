"""Write the tiny test models, register them and queue a demo benchmark with its baseline.

The tiny models hold random weights and are registered as test weights: the demo's rows appear
beside the board's main ranking, never in it.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from leaderboard import services
from leaderboard.models import Job
from runner.config import parse_config
from runner.gguf.tiny_models import FIXTURE_NAMES, write_fixtures
from runner.provenance import system_info

DEMO_PROTOCOL = {"name": "quick", "n_predict": 128, "runs": 3, "warmup": 1}
# Two speculative configs on one target: they share one automatic baseline job.
DEMO_CONFIGS = [
    {
        "target_model": "tiny-qwen3.gguf",
        "draft_model": "tiny-qwen3.gguf",
        "spec_types": ["draft-simple"],
        "n_max": 4,
        "protocol": DEMO_PROTOCOL,
    },
    {"target_model": "tiny-qwen3.gguf", "spec_types": ["ngram-mod"], "protocol": DEMO_PROTOCOL},
]


class Command(BaseCommand):
    help = (
        "Register the tiny fixture models, a local hardware row and a demo user; queue a demo job."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="demo")
        parser.add_argument(
            "--password", default=os.environ.get("SPECBOARD_DEMO_PASSWORD", "specboard-demo")
        )
        parser.add_argument("--hardware-slug", default=settings.SPECBOARD_HARDWARE_SLUG)
        parser.add_argument(
            "--no-submit", action="store_true", help="Register only; queue nothing."
        )

    def handle(self, *args, **options) -> None:
        models_dir = Path(settings.SPECBOARD_MODELS_DIR)
        if not all((models_dir / name).is_file() for name in FIXTURE_NAMES):
            write_fixtures(models_dir)
        for name in FIXTURE_NAMES:
            model = services.register_model(path=name)
            weights = ", test weights (its results stay off the main ranking)"
            self.stdout.write(
                f"model {model.name}: {model.architecture}, {model.role}"
                + (weights if model.test_weights else "")
            )
        system = system_info()
        hardware = services.register_hardware(
            gpu_name=system.get("gpu") or f"CPU {system.get('cpu') or 'unknown'}",
            memory_bytes=system.get("gpu_memory_bytes") or system.get("memory_bytes"),
            driver=system.get("driver") or "",
            cuda=system.get("cuda") or "",
            host=system.get("hostname") or "",
            slug=options["hardware_slug"],
        )
        self.stdout.write(
            f"hardware {hardware.slug}: {hardware.gpu_name}, queue {hardware.queue_name}"
        )
        user, created = get_user_model().objects.get_or_create(username=options["username"])
        if created:
            user.set_password(options["password"])
            user.save(update_fields=["password"])
            self.stdout.write(f"user {user.username} (password {options['password']!r})")
        if options["no_submit"]:
            return
        for data in DEMO_CONFIGS:
            key = parse_config(data).key
            if Job.objects.filter(config__key=key, hardware=hardware).exists():
                self.stdout.write(f"demo config {key} already submitted")
                continue
            with transaction.atomic():
                job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
            baseline = ", ".join(f"job {j.pk}" for j in job.baseline_jobs.all()) or "none needed"
            self.stdout.write(
                self.style.SUCCESS(
                    f"queued demo job {job.pk} ({job.config.label}); baseline: {baseline}"
                )
            )
