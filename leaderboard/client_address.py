"""The client's address: the one rule that every per-address limit uses.

Sign-in lockouts (django-axes), the sign-up and password-reset limits (django-allauth) and the
API throttles all count a request under this address, so a deployment states its proxies once
(SPECBOARD_TRUSTED_PROXIES) and no limit reads a header the others ignore.

- No proxy in front (0, the default): the connection's peer, REMOTE_ADDR. X-Forwarded-For is
  ignored, since any client can send it: believing it would let one client rotate addresses past
  every limit, or lock other people out under theirs.
- Behind N reverse proxies that each append the address they saw: the N-th entry from the right
  of X-Forwarded-For. Entries further left were written by the client and are never read. A
  request with fewer entries, or an entry that is not an address, did not come through every
  proxy as configured, so its peer address counts.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str | None:
    """The address this request is counted under (None only when the server gave no peer)."""
    peer = request.META.get("REMOTE_ADDR") or None
    proxies = settings.SPECBOARD_TRUSTED_PROXIES
    if proxies <= 0:
        return peer
    hops = [hop.strip() for hop in request.headers.get("x-forwarded-for", "").split(",")]
    if len(hops) < proxies:
        return peer
    return _address(hops[-proxies]) or peer


def _address(text: str) -> str | None:
    """`text` as a normalised IP address (a bracketed IPv6 form is accepted), else None."""
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None
