"""Who may call what, beyond DRF's own classes.

Reads are public and writes need a token or a session (settings' DEFAULT_PERMISSION_CLASSES);
`ReadOnlyOrAdmin` narrows the writes of the registry (registering models) to staff.
"""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request


class ReadOnlyOrAdmin(BasePermission):
    """Anyone reads; only staff write (register models, retire builds)."""

    def has_permission(self, request: Request, view) -> bool:
        if request.method in SAFE_METHODS:
            return True
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)
