"""Every read on accounts: a token by its key, a user's tokens, and what the account page shows."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import F, QuerySet

from leaderboard.accounts.models import ApiToken, key_digest


def token_for_key(*, key: str) -> ApiToken | None:
    """The token whose key this is (revoked or not), with its user; None for an unknown key."""
    return ApiToken.objects.select_related("user").filter(key_sha256=key_digest(key)).first()


def user_tokens(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The user's tokens, live ones first, newest first."""
    return ApiToken.objects.filter(user=user).order_by(
        F("revoked_at").asc(nulls_first=True), "-created_at", "-id"
    )
