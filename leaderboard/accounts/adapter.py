"""django-allauth's account adapter, with the site's one rule for the client's address."""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from django.core.exceptions import PermissionDenied

from leaderboard.client_address import client_address


class AccountAdapter(DefaultAccountAdapter):
    def get_client_ip(self, request) -> str:
        """The address allauth's limits count under: `leaderboard.client_address`'s, so a proxy
        set-up that does not match a request falls back to the peer instead of failing."""
        address = client_address(request)
        if not address:
            raise PermissionDenied("Unable to determine client IP address")
        return address
