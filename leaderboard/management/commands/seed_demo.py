"""Register the demo models and queue a demo benchmark: real text on a real model first.

With the real-model extra installed (``./specboard up`` installs it) the demo runs on Gemma 3 270M
base (runner.gguf.real_model): an n-gram config over the code and translation prompts, a
self-draft config and the n-gram config on the quality protocol's generated tasks, each measured
with its paired baseline in the same invocation (no separate baseline job is queued for them), so
the first board shows real acceptance, a fidelity grade and accuracy beside speed.
The tiny random-weight models are registered too, as test weights, and their demo runs beside the
ranking, never in it. Without the extra the demo says how to install it and runs on the tiny
models only.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand
from django.db import transaction

from leaderboard import services
from leaderboard.models import Hardware, Job
from leaderboard.services.jobs import measures_own_baseline
from runner.config import parse_config
from runner.errors import RunnerError
from runner.gguf.real_model import (
    REAL_MODEL_NAME,
    SMOLLM2_DFLASH,
    RealModelUnavailable,
    real_model_placers,
)
from runner.gguf.tiny_models import FIXTURE_NAMES, write_fixtures
from runner.provenance import system_info

# The real model's demo: examples/real-ngram.json, examples/real-self-draft.json and
# examples/real-quality.json (a test keeps them equal), so what the board shows can be rerun with `python -m runner run ... --baseline`.
# One engine thread: on a 2-core host the web server and workers share the cores, and two engine
# threads then spin waiting on each other whenever one of them is descheduled.
REAL_DEMO_CONFIGS = [
    {
        "target_model": "gemma-3-270m-q4_k_m.gguf",
        "spec_types": "ngram-simple",
        "threads": 1,
        "protocol": {
            "name": "categories",
            "categories": ["code", "translation"],
            "output_tokens": 48,
            "prompts_per_category": 2,
            "warmup": 1,
        },
    },
    {
        "target_model": "gemma-3-270m-q4_k_m.gguf",
        "draft_model": "gemma-3-270m-q4_k_m.gguf",
        "spec_types": "draft-simple",
        "n_max": 4,
        "threads": 1,
        "protocol": {
            "name": "quick",
            "runs": 3,
            "warmup": 1,
            "n_predict": 64,
            "prompt": (
                "The lighthouse keeper's log, written each evening at the top of the tower.\n\n"
                "12 March. Wind from the north-west, strong. Lamp lit at 18:40. Two fishing "
                "boats came in before dark; the ferry was late.\n\n13 March."
            ),
        },
    },
    # Quality beside speed: the n-gram config and its paired baseline answer the same twelve
    # generated tasks (runner.quality), eight tokens each, so the board shows each side's
    # accuracy and their paired difference; cheap on two cores (27 short requests in all).
    {
        "target_model": "gemma-3-270m-q4_k_m.gguf",
        "spec_types": "ngram-simple",
        "threads": 1,
        "protocol": {"name": "quality", "tasks": 12, "max_tokens": 8, "warmup": 1},
    },
]
# SmolLM2-135M-Instruct with Specboard's own DFlash draft (runner/gguf/drafts/, trained by
# training/dflash/): the board's real DFlash row, with its paired baseline, on the suite's held-out
# text prompts; examples/real-dflash.json (a test keeps them equal).
SMOLLM2_DEMO_CONFIGS = [
    {
        "target_model": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "draft_model": "smollm2-135m-dflash-specboard.Q8_0.gguf",
        "spec_types": "draft-dflash",
        # tau is about 1.2 with this draft on the suite: a short block verifies cheaply on CPU
        "n_max": 3,
        "threads": 1,
        "protocol": {
            "name": "categories",
            "categories": ["code", "question-answering"],
            "output_tokens": 64,
            "prompts_per_category": 2,
            "warmup": 1,
        },
    },
]
DEMO_PROTOCOL = {"name": "quick", "n_predict": 128, "runs": 3, "warmup": 1}
# Two speculative configs on the tiny test model (test weights: shown apart from the ranking).
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
        "Register the real Gemma 3 270M (when the real-model extra is installed) and the tiny test "
        "models, a local hardware row and a demo user; queue the demo jobs."
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
        placed = self._register_models(Path(settings.SPECBOARD_MODELS_DIR))
        hardware = self._register_hardware(options["hardware_slug"])
        user, created = get_user_model().objects.get_or_create(username=options["username"])
        if created:
            user.set_password(options["password"])
            user.save(update_fields=["password"])
            self.stdout.write(f"user {user.username} (password {options['password']!r})")
        if options["no_submit"]:
            return
        # The queue runs in order: the real model's rows come first.
        real_configs = (REAL_DEMO_CONFIGS if REAL_MODEL_NAME in placed else []) + (
            SMOLLM2_DEMO_CONFIGS if SMOLLM2_DFLASH.name in placed else []
        )
        for data in real_configs + DEMO_CONFIGS:
            self._queue_demo_job(data, user=user, hardware=hardware)

    def _register_models(self, models_dir: Path) -> list[str]:
        """Write the tiny models if missing, place the real ones, register them all; the real
        models' names placed."""
        if not all((models_dir / name).is_file() for name in FIXTURE_NAMES):
            write_fixtures(models_dir)
        placed = self._place_real_models(models_dir)
        for name in tuple(placed) + FIXTURE_NAMES:
            model = services.register_model(path=name)
            weights = ", test weights (its results stay off the main ranking)"
            self.stdout.write(
                f"model {model.name}: {model.architecture}, {model.role}"
                + (weights if model.test_weights else "")
            )
        return placed

    def _register_hardware(self, slug: str) -> Hardware:
        """This machine's hardware kind: every GPU its engine sees, else its CPU."""
        system = system_info()
        driver, cuda, host = (system.get(name) or "" for name in ("driver", "cuda", "hostname"))
        if system.get("gpus"):
            # Every GPU this machine's engine sees: the local worker claims its jobs with them.
            hardware = services.register_hardware_from_gpus(
                gpus=system["gpus"], driver=driver, cuda=cuda, host=host, slug=slug
            )
        else:
            hardware = services.register_hardware(
                gpu_name=system.get("gpu") or f"CPU {system.get('cpu') or 'unknown'}",
                memory_bytes=system.get("gpu_memory_bytes") or system.get("memory_bytes"),
                # The door holds this kind's CPU-only results to this machine's CPU model.
                cpu_model="" if system.get("gpu") else system.get("cpu") or "",
                driver=driver,
                cuda=cuda,
                host=host,
                slug=slug,
            )
        self.stdout.write(
            f"hardware {hardware.slug}: {hardware.label}, queue {hardware.queue_name}"
        )
        return hardware

    def _queue_demo_job(self, data: object, *, user: User, hardware: Hardware) -> None:
        """Submit one demo config, unless it was submitted on this hardware before."""
        key = parse_config(data).key
        if Job.objects.filter(config__key=key, hardware=hardware).exists():
            self.stdout.write(f"demo config {key} already submitted")
            return
        with transaction.atomic():
            job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
        if measures_own_baseline(job.config):
            baseline = "measured in the same run"
        else:
            baseline = ", ".join(f"job {j.pk}" for j in job.baseline_jobs.all()) or "none needed"
        self.stdout.write(
            self.style.SUCCESS(
                f"queued demo job {job.pk} ({job.config.label}); baseline: {baseline}"
            )
        )

    def _place_real_models(self, models_dir: Path) -> list[str]:
        """Put the real models beside the tiny ones; the names placed, and why not for the rest."""
        placed = []
        for name, place in real_model_placers():
            try:
                place(models_dir)
            except RealModelUnavailable as error:
                self.stdout.write(self.style.WARNING(f"{error}; the demo runs without {name}"))
            except RunnerError as error:
                self.stdout.write(self.style.WARNING(f"{name} not placed: {error}"))
            else:
                placed.append(name)
        return placed
