"""Make a new API token for a user (and with --create the user) and print its key, once."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from leaderboard.accounts import services


class Command(BaseCommand):
    help = (
        "Make a new API token for USER and print its key (for `Authorization: Token <key>`). "
        "Only the key's sha256 is stored: the key is printed this once and cannot be shown again."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--create", action="store_true", help="Create the user if missing.")
        parser.add_argument(
            "--name", default="command line", help="What the token is for (shown on /account/)."
        )

    def handle(self, *args, **options) -> None:
        users = get_user_model().objects
        user = users.filter(username=options["username"]).first()
        if user is None:
            if not options["create"]:
                raise CommandError(f"no such user: {options['username']} (add --create)")
            user = users.create_user(username=options["username"])
        try:
            issued = services.issue_api_token(user=user, name=options["name"])
        except services.TokenError as refusal:
            raise CommandError(str(refusal)) from None
        self.stdout.write(issued.key)
