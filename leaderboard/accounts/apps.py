"""The accounts app (label `accounts`): hashed API tokens and the account page."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "leaderboard.accounts"
    label = "accounts"
    verbose_name = "Accounts and API tokens"

    def ready(self) -> None:
        # drf-spectacular describes the token header once the extension class is imported.
        from leaderboard.accounts import schema  # noqa: F401
