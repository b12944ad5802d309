"""Import a seed-kit leaderboard_runs.csv as self-reported results."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from leaderboard import services


class Command(BaseCommand):
    help = "Import a leaderboard_runs.csv (the seed kit's format; tok/s is end-to-end)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("csv_path")
        parser.add_argument(
            "--hardware", required=True, help="The GPU the results were measured on."
        )
        parser.add_argument(
            "--baseline",
            help="run_name of the baseline row (default: the one without a draft marker).",
        )
        parser.add_argument(
            "--target", help="Name of the target model (default: the baseline's run_name)."
        )
        parser.add_argument("--user", help="Username recorded as the uploader.")

    def handle(self, *args, **options) -> None:
        path = Path(options["csv_path"])
        if not path.is_file():
            raise CommandError(f"no such file: {path}")
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"no such user: {options['user']}")
        try:
            report = services.import_leaderboard_csv(
                content=path.read_bytes(),
                hardware_name=options["hardware"],
                uploaded_by=user,
                baseline_run_name=options["baseline"],
                target_name=options["target"],
            )
        except services.ServiceError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"imported {report.runs_created} runs ({report.runs_skipped} already present) into "
            f"{len(report.configs)} configs on {report.hardware.slug}; baseline {report.baseline_run_name}"
        )
