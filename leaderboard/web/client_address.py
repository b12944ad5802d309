"""The client's address: the one rule that every per-address limit uses.

Sign-in lockouts (django-axes), the sign-up and password-reset limits (django-allauth) and the
API throttles all count a request under this address, so a deployment states its proxies once
and no limit reads a header the others ignore.

- No proxy in front (SPECBOARD_TRUSTED_PROXIES=0, the default): the connection's peer,
  REMOTE_ADDR. X-Forwarded-For is ignored, since any client can send it: believing it would let
  one client rotate addresses past every limit, or lock other people out under theirs.
- Behind N reverse proxies that each append the address they saw: the N-th entry from the right
  of X-Forwarded-For, read only when the connection comes from one of the proxies' networks
  (SPECBOARD_TRUSTED_PROXY_NETWORKS, which the operator lists: none by default, since loopback
  and the private ranges also hold a docker port mapping's gateway, other containers and the
  LAN, any of which could otherwise choose its own address), and only when the entries
  the inner proxies appended are proxies' addresses too. Entries
  further left were written by the client and are never read. A request from elsewhere (a client
  that reached the web server directly), with fewer entries than N, or with an entry that is no
  address, did not come through the proxies as configured: its peer address counts. A Unix
  socket (no peer address) can only be reached from the machine itself: a proxy's connection.
- One client, one address: an IPv4 address written as IPv6 (::ffff:a.b.c.d) counts as itself,
  and an IPv6 address counts as its /64 network (written as the network's first address, which
  an address column holds), the block one subscriber gets, so rotating addresses inside it
  gains nothing. An entry with a port (a.b.c.d:443, [v6]:443) is read without it.
"""

from __future__ import annotations

import ipaddress
from functools import cache

from django.conf import settings
from django.http import HttpRequest

IPV6_PREFIX = 64


def client_address(request: HttpRequest) -> str | None:
    """The address this request is counted under (None only when the server gave no peer)."""
    remote = request.META.get("REMOTE_ADDR") or ""
    peer = _address(remote)
    proxies = settings.SPECBOARD_TRUSTED_PROXIES
    # No peer address at all is a Unix socket (gunicorn behind a proxy on the same machine):
    # only that machine can reach it, so it counts as a proxy's connection. A peer address that
    # is there but no address counts as nobody's proxy.
    from_a_proxy = _from_a_proxy(peer) if peer is not None else not remote.strip()
    if proxies <= 0 or not from_a_proxy:
        return _key(peer)
    hops = [hop.strip() for hop in request.headers.get("x-forwarded-for", "").split(",")]
    if len(hops) < proxies:
        return _key(peer)
    return _forwarded_client(hops, proxies, peer)


def _forwarded_client(
    hops: list[str], proxies: int, peer: ipaddress.IPv4Address | ipaddress.IPv6Address | None
) -> str | None:
    """The client named in X-Forwarded-For, read from the right past `proxies` proxies."""
    # The proxies' own entries (all but the outermost's) must be proxies too: a client that
    # reached an inner proxy directly is the first entry from the right that is not one.
    for hop in reversed(hops[len(hops) - proxies + 1 :]):
        address = _address(hop)
        if address is None:
            return _key(peer)
        if not _from_a_proxy(address):
            return _key(address)
    return _key(_address(hops[-proxies]) or peer)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """`text` as an IP address, a port or IPv6 brackets dropped; None if it is none."""
    text = text.strip()
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # a.b.c.d:port (an IPv6 address has two colons or more)
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _key(address: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> str | None:
    if address is None:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        # The /64's first address, not "net/64": axes stores it in an address column.
        return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False).network_address)
    return str(address)


def _from_a_proxy(peer: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return any(
        peer in network for network in _proxy_networks(settings.SPECBOARD_TRUSTED_PROXY_NETWORKS)
    )


@cache
def _proxy_networks(networks: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(network, strict=False) for network in networks)
