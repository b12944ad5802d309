"""django-allauth's account adapter, with the site's one rule for the client's address."""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from axes.helpers import get_lockout_response
from django.core.exceptions import PermissionDenied, ValidationError

from leaderboard.web.client_address import client_address


class AccountAdapter(DefaultAccountAdapter):
    def get_client_ip(self, request) -> str:
        """The address allauth's limits count under: `leaderboard.web.client_address`'s, so a proxy
        set-up that does not match a request falls back to the peer instead of failing."""
        address = client_address(request)
        if not address:
            raise PermissionDenied("Unable to determine client IP address")
        return address

    def pre_authenticate(self, request, **credentials) -> None:
        """An address that used up its failed sign-ins (ACCOUNT_RATE_LIMITS' login_failed, per
        address only) gets the answer an account's lockout gets: the lockout page, 429."""
        try:
            super().pre_authenticate(request, **credentials)
        except ValidationError:
            response = get_lockout_response(request, credentials=credentials)
            raise ImmediateHttpResponse(response) from None
