"""Who may call what, beyond DRF's own classes.

Reads are public and writes need a token or a session (settings' DEFAULT_PERMISSION_CLASSES);
`ReadOnlyOrAdmin` narrows the writes of the registry (registering models) to staff.
"""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import User
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request


def signed_in_user(request: Request) -> User:
    """The user of a request a permission let through only signed in (`IsAuthenticated`,
    `IsAdminUser`, `ReadOnlyOrAdmin`'s writes): an account, never the anonymous one."""
    return cast(User, request.user)


class ReadOnlyOrAdmin(BasePermission):
    """Anyone reads; only staff write (register models, retire builds)."""

    def has_permission(self, request: Request, view) -> bool:
        if request.method in SAFE_METHODS:
            return True
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)
