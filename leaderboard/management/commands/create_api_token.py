"""Print a user's API token, creating the token (and with --create the user) if needed."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Print the API token of USER (for `Authorization: Token <key>`)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--create", action="store_true", help="Create the user if missing.")

    def handle(self, *args, **options) -> None:
        users = get_user_model().objects
        user = users.filter(username=options["username"]).first()
        if user is None:
            if not options["create"]:
                raise CommandError(f"no such user: {options['username']} (add --create)")
            user = users.create_user(username=options["username"])
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
