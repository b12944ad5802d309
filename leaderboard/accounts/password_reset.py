"""The tokens in password-reset links (ACCOUNT_PASSWORD_RESET_TOKEN_GENERATOR).

allauth's own generator puts the account's addresses into the token, so that a link goes stale
once they change, and on the way copies the account's `email` field into an unconfirmed address
record whenever it makes or checks a link. An anonymous reset request for an account an admin
made (an `email`, no address record) thereby gave that account an address to confirm: it could
no longer sign in, even after finishing the reset. This generator reads the same addresses and
writes nothing, so asking for a reset changes no account.

Settings name this module by path: it imports no allauth forms (allauth's forms module builds
its default generator from the setting while it is being imported).
"""

from __future__ import annotations

from allauth.account.internal.userkit import user_email
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User
from django.contrib.auth.tokens import PasswordResetTokenGenerator


class ResetTokenGenerator(PasswordResetTokenGenerator):
    """Django's reset tokens, stale once the password, a sign-in or any address changes."""

    def _make_hash_value(self, user: User, timestamp: int) -> str:
        # The same value as allauth's (a link mailed before an upgrade still works), unsynced.
        email = user_email(user)
        addresses = {email} if email else set()
        addresses.update(
            EmailAddress.objects.filter(user_id=user.pk).values_list("email", flat=True)
        )
        return super()._make_hash_value(user, timestamp) + "|".join(sorted(addresses))
