"""Import runner result files (python -m runner run ... --out RESULT.json) as runs on a hardware kind."""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from leaderboard import services


class Command(BaseCommand):
    help = "Record runner result JSON files, and their paired baselines, on a hardware kind."

    def add_arguments(self, parser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--hardware", required=True, help='GPU name, e.g. "NVIDIA H200"')
        parser.add_argument("--memory-gib", type=float, help="GPU memory in GiB")
        parser.add_argument("--user", default="admin", help="owner of the imported jobs")
        parser.add_argument(
            "--source",
            # Says only what is known of any file; a pipeline's own import names itself.
            default="a runner result file imported with manage.py import_runner_results",
            help="how the results were measured (kept in their provenance), e.g. "
            '"measured by bench/gpu/h200_pipeline.py through runner.run_benchmark"',
        )

    def handle(self, *args, **options) -> None:
        owner, _ = get_user_model().objects.get_or_create(username=options["user"])
        memory = int(options["memory_gib"] * 2**30) if options["memory_gib"] else None
        hardware = services.register_hardware(gpu_name=options["hardware"], memory_bytes=memory)
        for path in options["files"]:
            try:
                result = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as error:
                raise CommandError(f"{path}: {error}") from None
            try:
                runs = services.import_runner_result(
                    owner=owner, hardware=hardware, result=result, source=options["source"]
                )
            except services.ServiceError as error:
                raise CommandError(f"{path}: {error.errors}") from None
            for run in runs:
                self.stdout.write(
                    f"{path.name}: run {run.pk} {run.config.label} on {hardware.slug}: "
                    f"{run.decode_mean or 0:.1f} tok/s"
                )
