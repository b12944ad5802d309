"""Every per-address limit counts a request under one address (leaderboard.client_address): the
peer unless the deployment says how many proxies append to X-Forwarded-For, and never an entry a
client could have written itself."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory

from leaderboard.client_address import client_address

PASSWORD = "correct-horse-battery"
PROXY = "10.0.0.5"


def request_from(peer: str, forwarded: str | None = None):
    headers = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    return RequestFactory().get("/", REMOTE_ADDR=peer, **headers)


@pytest.mark.parametrize(
    ("proxies", "peer", "forwarded", "expected"),
    [
        # No proxy configured: the header is the client's own words and is not read.
        (0, "203.0.113.7", "198.51.100.1", "203.0.113.7"),
        (0, "203.0.113.7", None, "203.0.113.7"),
        # One proxy: the entry it appended (the last); what the client wrote before it is not read.
        (1, PROXY, "1.2.3.4, 198.51.100.1", "198.51.100.1"),
        (1, PROXY, "198.51.100.1", "198.51.100.1"),
        # Two proxies: the entry the outer one appended, second from the right.
        (2, PROXY, "6.6.6.6, 198.51.100.1, 10.0.0.9", "198.51.100.1"),
        # Fewer entries than proxies, no header, or a non-address: the peer counts.
        (2, PROXY, "198.51.100.1", PROXY),
        (1, PROXY, None, PROXY),
        (1, PROXY, "not-an-address", PROXY),
        (1, PROXY, "", PROXY),
        # IPv6, bracketed or not, comes back normalised.
        (1, PROXY, "[2001:DB8::1]:443", "2001:db8::1"),
        (1, PROXY, "2001:db8:0:0::1", "2001:db8::1"),
    ],
)
def test_the_address_a_request_counts_under(settings, proxies, peer, forwarded, expected):
    settings.SPECBOARD_TRUSTED_PROXIES = proxies
    assert client_address(request_from(peer, forwarded)) == expected


@pytest.fixture
def accounts(django_user_model):
    return [
        django_user_model.objects.create_user(username=name, password=PASSWORD)
        for name in ("ada", "grace")
    ]


def sign_in(username: str, password: str, *, peer: str, forwarded: str | None = None) -> bool:
    client = Client()
    headers = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    client.post(
        "/accounts/login/",
        {"login": username, "password": password},
        REMOTE_ADDR=peer,
        **headers,
    )
    return "_auth_user_id" in client.session


def test_without_a_proxy_a_client_rotating_x_forwarded_for_is_still_locked_out(accounts):
    for index, name in enumerate(("nobody", "root", "admin", "guest", "test")):
        sign_in(name, "wrong", peer="192.0.2.9", forwarded=f"198.51.100.{index}")

    # The address is locked whatever the next request claims to come from.
    assert not sign_in("grace", PASSWORD, peer="192.0.2.9", forwarded="198.51.100.200")
    # And nobody was locked out under the addresses it claimed.
    assert sign_in("grace", PASSWORD, peer="198.51.100.1")


def test_behind_a_proxy_each_client_is_counted_under_its_own_address(accounts, settings):
    settings.SPECBOARD_TRUSTED_PROXIES = 1
    for index, name in enumerate(("nobody", "root", "admin", "guest", "test")):
        # The attacker's spoofed entries come first; the proxy appends the real address.
        sign_in(name, "wrong", peer=PROXY, forwarded=f"7.7.7.{index}, 192.0.2.9")

    assert not sign_in("grace", PASSWORD, peer=PROXY, forwarded="192.0.2.9")
    # Another visitor through the same proxy is not locked out with it.
    assert sign_in("grace", PASSWORD, peer=PROXY, forwarded="192.0.2.10")


def sign_up(index: int, *, peer: str, forwarded: str | None = None) -> int:
    headers = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    return (
        Client()
        .post(
            "/accounts/signup/",
            {
                "email": f"user{index}@example.org",
                "username": f"user{index}",
                "password1": PASSWORD,
                "password2": PASSWORD,
            },
            REMOTE_ADDR=peer,
            **headers,
        )
        .status_code
    )


@pytest.fixture
def two_sign_ups_an_hour(settings):
    settings.ACCOUNT_RATE_LIMITS = settings.ACCOUNT_RATE_LIMITS | {"signup": "2/h/ip"}


def test_without_a_proxy_the_sign_up_limit_ignores_x_forwarded_for(db, two_sign_ups_an_hour):
    codes = [sign_up(i, peer="192.0.2.20", forwarded=f"198.51.100.{i}") for i in range(3)]
    assert codes == [302, 302, 429]


def test_behind_a_proxy_the_sign_up_limit_is_per_visitor(db, two_sign_ups_an_hour, settings):
    settings.SPECBOARD_TRUSTED_PROXIES = 1
    codes = [sign_up(i, peer=PROXY, forwarded=f"6.6.6.{i}, 192.0.2.20") for i in range(3)]
    assert codes == [302, 302, 429]
    assert sign_up(3, peer=PROXY, forwarded="192.0.2.21") == 302
    # A request that did not come through the proxy as configured fails nothing: it counts
    # under its peer.
    assert sign_up(4, peer="192.0.2.30") == 302


def test_the_api_throttle_counts_an_anonymous_request_under_the_same_address(settings):
    from leaderboard.api.throttles import SubmissionThrottle

    throttle = SubmissionThrottle()
    request = request_from("192.0.2.40", "198.51.100.1")
    request.user = type("Anonymous", (), {"is_authenticated": False})()
    assert throttle.get_ident(request) == "192.0.2.40"
    settings.SPECBOARD_TRUSTED_PROXIES = 1
    assert throttle.get_ident(request) == "198.51.100.1"
