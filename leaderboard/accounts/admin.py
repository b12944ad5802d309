"""API tokens in the admin: listed and revocable; a key is never shown (only its prefix is kept)."""

from __future__ import annotations

from django.contrib import admin

from leaderboard.accounts import services
from leaderboard.accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix", "user__username")
    readonly_fields = ("user", "prefix", "key_sha256", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        # A key is shown once to whoever makes it: users on /account/, admins with the command.
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset) -> None:
        count = services.revoke_api_tokens(token_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{count} token(s) revoked.")
