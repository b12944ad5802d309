"""Register a hardware kind that a GPU worker serves (queue gpu.<slug>)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from leaderboard import services


class Command(BaseCommand):
    help = "Register a hardware kind; its GPU workers consume the queue gpu.<slug>."

    def add_arguments(self, parser) -> None:
        parser.add_argument("gpu_name", help='e.g. "NVIDIA H200"')
        parser.add_argument("--memory-gib", type=float)
        parser.add_argument(
            "--slug", help="Default: from the GPU name and memory, e.g. h200-141gb."
        )
        parser.add_argument("--driver", default="")
        parser.add_argument("--cuda", default="")
        parser.add_argument("--host", default="")

    def handle(self, *args, **options) -> None:
        memory = int(options["memory_gib"] * 2**30) if options["memory_gib"] else None
        hardware = services.register_hardware(
            gpu_name=options["gpu_name"],
            memory_bytes=memory,
            slug=options["slug"],
            driver=options["driver"],
            cuda=options["cuda"],
            host=options["host"],
        )
        self.stdout.write(f"{hardware.slug}\t{hardware.queue_name}")
