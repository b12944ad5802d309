"""Every read on accounts: a token by its key, a user's tokens, what the account page shows, and
the account a sign-in attempt is counted against."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db.models import F, QuerySet

from leaderboard.accounts.models import ApiToken, key_digest


def token_for_key(*, key: str) -> ApiToken | None:
    """The token whose key this is (revoked or not), with its user; None for an unknown key."""
    try:
        # One row at most (the digest is unique): get() asks for no ordering, as first() would.
        return ApiToken.objects.select_related("user").get(key_sha256=key_digest(key))
    except ApiToken.DoesNotExist:
        return None


def user_tokens(*, user: User) -> QuerySet[ApiToken]:
    """The user's tokens, live ones first, newest first."""
    return ApiToken.objects.filter(user=user).order_by(
        F("revoked_at").asc(nulls_first=True), "-created_at", "-id"
    )


# axes' AccessAttempt.username is 255 characters; no account's name or address is longer.
SIGN_IN_NAME_LENGTH = 255


def sign_in_account(*, login: str) -> User | None:
    """The one account a sign-in's typed name or address means, or None.

    Text with an @ is an address first: a confirmed address on record, then any address on
    record, then an account's own `email` (accounts an admin made have only that), and only
    then a user name that looks like an address, so nobody can take over another person's
    address as a user name. Other text is a user name: exactly as typed, else in any case.
    Both the password check (leaderboard.accounts.backends) and the failure count read it."""
    login = login.replace("\x00", "").strip()
    if not login or len(login) >= SIGN_IN_NAME_LENGTH:
        return None
    users = get_user_model().objects.order_by("pk")
    if "@" in login:
        address = (
            EmailAddress.objects.filter(email__iexact=login)
            .select_related("user")
            .order_by("-verified", "-primary", "pk")
            .first()
        )
        if address is not None:
            return address.user
        if (account := users.filter(email__iexact=login).first()) is not None:
            return account
    return users.filter(username=login).first() or users.filter(username__iexact=login).first()


def sign_in_name(request, credentials: dict | None = None) -> str:
    """The name axes counts a sign-in attempt under (AXES_USERNAME_CALLABLE).

    One account is one count: the typed user name or address, in any case, is the account's own
    user name when it is one account's (`sign_in_account`), so switching between name and
    address or changing case starts no fresh count. Text that is no account's is counted
    case-folded. NUL (which PostgreSQL refuses) is dropped and the result fits axes' column."""
    data = credentials or getattr(request, "POST", None) or {}
    typed = next((data.get(key) for key in ("username", "email", "login") if data.get(key)), "")
    typed = str(typed).replace("\x00", "").strip()
    account = sign_in_account(login=typed)
    return (account.get_username() if account else typed.casefold())[:SIGN_IN_NAME_LENGTH]
