"""Deployment checks Django runs at start (`manage.py check`, runserver, gunicorn's first request)."""

from __future__ import annotations

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.security, deploy=False)
def proxy_without_client_addresses(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """Behind a TLS proxy with no proxy count, every visitor shares the proxy's address, so one
    visitor's failed sign-ins or sign-ups use up everyone's limits."""
    if getattr(settings, "BEHIND_TLS_PROXY", False) and settings.SPECBOARD_TRUSTED_PROXIES == 0:
        return [
            checks.Warning(
                "BEHIND_TLS_PROXY is on but SPECBOARD_TRUSTED_PROXIES is 0: every visitor is "
                "counted under the proxy's address by the sign-in, sign-up and reset limits.",
                hint="Set SPECBOARD_TRUSTED_PROXIES to the number of proxies that append to "
                "X-Forwarded-For (1 for one nginx), and SPECBOARD_TRUSTED_PROXY_NETWORKS to the "
                "networks they connect from.",
                id="specboard.W001",
            )
        ]
    return []


@checks.register(checks.Tags.security, deploy=False)
def proxies_without_networks(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """A proxy count with no proxy networks reads X-Forwarded-For only from a Unix socket: over
    TCP every visitor is counted under the proxy's address, as with no proxy count at all."""
    if settings.SPECBOARD_TRUSTED_PROXIES > 0 and not settings.SPECBOARD_TRUSTED_PROXY_NETWORKS:
        return [
            checks.Warning(
                "SPECBOARD_TRUSTED_PROXIES is set but SPECBOARD_TRUSTED_PROXY_NETWORKS lists no "
                "network: X-Forwarded-For is read only from a Unix socket, so over TCP every "
                "visitor is counted under the proxy's address.",
                hint="List the networks the proxies connect from, e.g. "
                "SPECBOARD_TRUSTED_PROXY_NETWORKS=172.18.0.2/32 (never a whole range that "
                "clients can connect from too).",
                id="specboard.W002",
            )
        ]
    return []
