"""Register a GPU host for a hardware kind and print the key it signs its results with and its
broker user's ACL rule (once)."""

from __future__ import annotations

import json
import secrets

from django.core.management.base import BaseCommand, CommandError

from leaderboard import services
from leaderboard.messaging.broker import host_acl_rule


class Command(BaseCommand):
    help = (
        "Register a GPU host; prints SPECBOARD_HOST_NAME and SPECBOARD_HOST_KEY for its worker, "
        "a broker password for its GPU_BROKER_URL and the line for the broker's users.acl "
        "(shown only now)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", help="the host's name, e.g. lab-4090-a")
        parser.add_argument("--hardware", required=True, help="the hardware kind's slug it serves")
        parser.add_argument(
            "--engine-release",
            default="",
            help="the llama.cpp release it runs, when not the site's (SPECBOARD_ENGINE_RELEASE): "
            "its results may carry only that one or the job's own",
        )
        parser.add_argument(
            "--gpus",
            help="the GPUs it advertises, as `python -m runner gpus --json` prints them on the "
            "host: they must be the kind's (2x RTX 3090 24GB: two RTX 3090s)",
        )
        parser.add_argument(
            "--broker-db", type=int, default=0, help="the broker's database number (URL path)"
        )
        parser.add_argument("--revoke", action="store_true", help="stop accepting its messages")

    def handle(self, *args, **options) -> None:
        if options["revoke"]:
            if not services.revoke_gpu_host(name=options["name"]):
                raise CommandError(f"no such host: {options['name']}")
            self.stdout.write(f"host {options['name']} revoked")
            return
        gpus = None
        if options["gpus"]:
            try:
                gpus = json.loads(options["gpus"])
            except json.JSONDecodeError as error:
                raise CommandError(f"--gpus is not JSON: {error}") from None
        try:
            host, key = services.register_gpu_host(
                name=options["name"],
                hardware_slug=options["hardware"],
                engine_release=options["engine_release"],
                gpus=gpus,
            )
        except services.ServiceError as error:
            raise CommandError(str(error)) from None
        password = secrets.token_urlsafe(24)
        rule = host_acl_rule(
            host_name=host.name,
            hardware_slug=host.hardware.slug,
            password=password,
            db=options["broker_db"],
        )
        self.stdout.write(
            f"SPECBOARD_HOST_NAME={host.name}\nSPECBOARD_HOST_KEY={key}\n"
            f"# Its broker user: GPU_BROKER_URL=rediss://{host.name}:<password>@<broker>/"
            f"{options['broker_db']}, and this line in the broker's users.acl\n"
            f"BROKER_PASSWORD={password}\n{rule}"
        )
