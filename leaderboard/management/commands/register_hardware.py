"""Register a hardware kind that a GPU worker serves (queue gpu.<slug>): one GPU or several, or
this machine's CPU."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from leaderboard import services
from runner.provenance import cpu_name, visible_gpus


class Command(BaseCommand):
    help = (
        "Register a hardware kind; its GPU workers consume the queue gpu.<slug>. "
        "--this-host takes every GPU NVML shows here (2x RTX 3090 24GB is a kind of its own), "
        "or this machine's CPU model where it shows none."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("gpu_name", nargs="?", help='e.g. "NVIDIA H200"')
        parser.add_argument("--memory-gib", type=float, help="each GPU's memory")
        parser.add_argument(
            "--gpu-count", type=int, default=1, help="how many such GPUs a host has (default 1)"
        )
        parser.add_argument(
            "--this-host",
            action="store_true",
            help="the GPUs CUDA makes visible on this machine, as NVML names them; without one, "
            'its CPU ("CPU <model>", its results held to that model)',
        )
        parser.add_argument(
            "--slug", help="Default: from the GPUs' count, name and memory, e.g. 2x-rtx-3090-24gb."
        )
        parser.add_argument("--driver", default="")
        parser.add_argument("--cuda", default="")
        parser.add_argument("--host", default="")

    def handle(self, *args, **options) -> None:
        common = {
            "slug": options["slug"],
            "driver": options["driver"],
            "cuda": options["cuda"],
            "host": options["host"],
        }
        try:
            if options["this_host"]:
                gpus = visible_gpus()
                if gpus:
                    hardware = services.register_hardware_from_gpus(gpus=gpus, **common)
                else:
                    cpu = cpu_name()
                    hardware = services.register_hardware(
                        gpu_name=f"CPU {cpu}", cpu_model=cpu, **common
                    )
            elif options["gpu_name"]:
                memory = int(options["memory_gib"] * 2**30) if options["memory_gib"] else None
                hardware = services.register_hardware(
                    gpu_name=options["gpu_name"],
                    memory_bytes=memory,
                    gpu_count=options["gpu_count"],
                    **common,
                )
            else:
                raise CommandError("give a GPU name, or --this-host")
        except services.ServiceError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"{hardware.slug}\t{hardware.queue_name}")
