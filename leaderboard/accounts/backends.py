"""The sign-in backend: a user name or an email address and a password, at the same cost
whether or not an account answers to them.

Django's ModelBackend and allauth's backend together hashed the password three times for an
address on record and twice for one that is not, a difference anyone timing the sign-in page
could see: it told which addresses have accounts. Here every
attempt computes exactly one hash: the account's check, or the same hasher's work on the typed
password when no account (or no usable password) answers.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.http import HttpRequest

from leaderboard.accounts.selectors import sign_in_account


class SignInBackend(ModelBackend):
    """Sign-in by user name or address (allauth's form, the admin's): one password hash each."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **credentials: object,
    ) -> User | None:
        login = username or credentials.get("email")
        if not login or password is None:
            return None
        user = sign_in_account(login=str(login))
        if user is None or not user.has_usable_password():
            # An unusable password is refused without hashing: do the work a check would.
            get_user_model()().set_password(password)
            return None
        if user.check_password(password) and self.user_can_authenticate(user):
            return user
        return None
