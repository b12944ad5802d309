"""API tokens, stored as the sha256 of their key: the key itself is shown once and never kept."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone


def key_digest(key: str) -> str:
    """The sha256 a key is stored and looked up by."""
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    """One API key of a user: `Authorization: Token <key>` (or `Bearer <key>`)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    # The key's first characters, enough to tell a user's tokens apart, never enough to use one.
    prefix = models.CharField(max_length=16)
    key_sha256 = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "revoked_at"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
