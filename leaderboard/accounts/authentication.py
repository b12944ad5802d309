"""The API's token authentication: `Authorization: Token <key>` (what clients have always sent)
or `Authorization: Bearer <key>`, checked against the sha256 of the keys on record."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from leaderboard.accounts import selectors, services

KEYWORDS = ("token", "bearer")


class ApiTokenAuthentication(BaseAuthentication):
    """A hashed API token; a revoked or unknown key is a 401 that says which."""

    def authenticate(self, request: Request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower().decode(errors="replace") not in KEYWORDS:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                "Invalid token header: give one key, as in 'Authorization: Token <key>'."
            )
        try:
            key = parts[1].decode("ascii")
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid token: not ASCII.") from None
        token = selectors.token_for_key(key=key)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.is_active:
            raise exceptions.AuthenticationFailed("This token has been revoked.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("This token's account is inactive.")
        services.record_token_use(token=token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        # A header here makes DRF answer 401 (not 403) to a write without credentials.
        return "Token"
