"""Every write on API tokens: issuing one (its key returned once, only its sha256 kept), revoking
one or all of a user's, and noting when one was last used; and clearing an account's sign-in
lockout once its owner has proved it with a reset link.

The key is `sbk_` and 43 URL-safe characters (256 random bits); its first 12 characters are kept
as the token's prefix so that a user can tell their tokens apart on the account page.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from axes import utils as axes_utils
from django.contrib.auth.models import User
from django.db.models import Q
from django.utils import timezone

from leaderboard.accounts.models import ApiToken, key_digest
from leaderboard.services.errors import ServiceError

KEY_START = "sbk_"
PREFIX_LENGTH = 12
MAX_NAME_LENGTH = 100
# A user with this many live tokens revokes one before making another.
MAX_ACTIVE_TOKENS = 20
# last_used_at is rewritten at most this often, so a busy client does not write on every request.
LAST_USED_RESOLUTION = timedelta(seconds=60)


class TokenError(ServiceError):
    """A token cannot be issued; nothing was created."""


@dataclass(frozen=True)
class IssuedToken:
    """A new token and its key: the only moment the key exists outside the client."""

    token: ApiToken
    key: str


def issue_api_token(
    *, user: User, name: str, created_at=None, key: str | None = None
) -> IssuedToken:
    """A new token for `user`; only the key's sha256 and its prefix are stored.

    `key` and `created_at` are for carrying over a key issued before hashing (the data migration
    of DRF's plain tokens); everything else gets a fresh random key."""
    name = name.strip()
    if not name:
        raise TokenError({"name": ["give the token a name (what will use it?)"]})
    if len(name) > MAX_NAME_LENGTH:
        raise TokenError({"name": [f"at most {MAX_NAME_LENGTH} characters"]})
    active = ApiToken.objects.filter(user=user, revoked_at=None).count()
    if active >= MAX_ACTIVE_TOKENS:
        raise TokenError(
            {"name": [f"you have {active} active tokens, the most allowed; revoke one first"]}
        )
    key = key or KEY_START + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=key[:PREFIX_LENGTH],
        key_sha256=key_digest(key),
        created_at=created_at or timezone.now(),
    )
    return IssuedToken(token=token, key=key)


def revoke_api_token(*, token_id: int, user: User) -> bool:
    """Revoke one of `user`'s live tokens; False if it is not theirs or already revoked."""
    return bool(
        ApiToken.objects.filter(id=token_id, user=user, revoked_at=None).update(
            revoked_at=timezone.now()
        )
    )


def revoke_api_tokens(*, token_ids: list[int]) -> int:
    """Revoke these tokens, whoever owns them (the admin's action); how many were live."""
    return ApiToken.objects.filter(id__in=token_ids, revoked_at=None).update(
        revoked_at=timezone.now()
    )


def revoke_user_api_tokens(*, user: User) -> int:
    """Revoke every live token of `user` (on a password change or reset); how many were live."""
    return ApiToken.objects.filter(user=user, revoked_at=None).update(revoked_at=timezone.now())


def record_token_use(*, token: ApiToken) -> None:
    """Note that `token` authenticated a request now (at most once per LAST_USED_RESOLUTION)."""
    now = timezone.now()
    if token.last_used_at is not None and token.last_used_at >= now - LAST_USED_RESOLUTION:
        return  # as read with the token: noted recently, no statement to send
    stale = Q(last_used_at=None) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
    if ApiToken.objects.filter(stale, id=token.id).update(last_used_at=now):
        token.last_used_at = now


def clear_sign_in_lockout(*, user: User) -> int:
    """Forget the failed sign-ins counted against the account (django-axes counts them under its
    user name: accounts.selectors.sign_in_name); how many records went."""
    return axes_utils.reset(username=user.get_username())
