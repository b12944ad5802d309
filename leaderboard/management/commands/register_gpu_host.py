"""Register a GPU host for a hardware kind and print the key it signs its results with (once)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from leaderboard import services


class Command(BaseCommand):
    help = (
        "Register a GPU host; prints SPECBOARD_HOST_NAME and SPECBOARD_HOST_KEY for its worker "
        "(the key is shown only now)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", help="the host's name, e.g. lab-4090-a")
        parser.add_argument("--hardware", required=True, help="the hardware kind's slug it serves")
        parser.add_argument("--revoke", action="store_true", help="stop accepting its messages")

    def handle(self, *args, **options) -> None:
        if options["revoke"]:
            if not services.revoke_gpu_host(name=options["name"]):
                raise CommandError(f"no such host: {options['name']}")
            self.stdout.write(f"host {options['name']} revoked")
            return
        try:
            host, key = services.register_gpu_host(
                name=options["name"], hardware_slug=options["hardware"]
            )
        except services.ServiceError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"SPECBOARD_HOST_NAME={host.name}\nSPECBOARD_HOST_KEY={key}")
