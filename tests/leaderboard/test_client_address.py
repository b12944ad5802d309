"""Every per-address limit counts a request under one address (leaderboard.web.client_address): the
peer unless the deployment says how many proxies append to X-Forwarded-For, and never an entry a
client could have written itself."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client, RequestFactory

from leaderboard.web.client_address import client_address
from tests.support.settings_env import refusal, settings_values

PASSWORD = "correct-horse-battery"
PROXY = "10.0.0.5"


@pytest.fixture(autouse=True)
def proxies_network(settings):
    """The deployment these tests describe lists its proxies' network, 10.0.0.0/8."""
    settings.SPECBOARD_TRUSTED_PROXY_NETWORKS = ("10.0.0.0/8",)


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
        # A client that reaches the web server directly, not through a proxy's network, cannot
        # choose its address by sending the header itself.
        (1, "203.0.113.9", "6.6.6.6", "203.0.113.9"),
        (2, "203.0.113.9", "6.6.6.6, 7.7.7.7", "203.0.113.9"),
        # Two proxies: an inner entry that is no proxy's is a client that reached the inner
        # proxy directly, whatever it wrote further left.
        (2, PROXY, "6.6.6.6, 198.51.100.1", "198.51.100.1"),
        (3, PROXY, "6.6.6.6, 7.7.7.7, 10.0.0.9", "7.7.7.7"),
        # A peer address that is no address is nobody's proxy.
        (1, "garbage", "198.51.100.1", None),
        # Fewer entries than proxies, no header, or a non-address: the peer counts.
        (2, PROXY, "198.51.100.1", PROXY),
        (1, PROXY, None, PROXY),
        (1, PROXY, "not-an-address", PROXY),
        (1, PROXY, "", PROXY),
        # A port is dropped, whichever way it is written.
        (1, PROXY, "198.51.100.1:5555", "198.51.100.1"),
        (1, PROXY, "[2001:DB8::1]:443", "2001:db8::"),
        # IPv6 counts as its /64 (one subscriber's block); IPv4 written as IPv6 as itself.
        (1, PROXY, "2001:db8:0:0:ffff::1", "2001:db8::"),
        (0, "2001:db8::5", None, "2001:db8::"),
        (1, PROXY, "::ffff:198.51.100.1", "198.51.100.1"),
        (0, "::ffff:203.0.113.7", None, "203.0.113.7"),
        # A Unix socket has no peer address: behind a proxy its header is read, else nothing is.
        (1, "", "1.2.3.4, 198.51.100.1", "198.51.100.1"),
        (1, "", None, None),
        (0, "", "198.51.100.1", None),
    ],
)
def test_the_address_a_request_counts_under(settings, proxies, peer, forwarded, expected):
    settings.SPECBOARD_TRUSTED_PROXIES = proxies
    assert client_address(request_from(peer, forwarded)) == expected


def test_the_proxies_networks_are_the_deployments_to_say(settings):
    settings.SPECBOARD_TRUSTED_PROXIES = 1
    settings.SPECBOARD_TRUSTED_PROXY_NETWORKS = ("203.0.113.0/24",)
    assert client_address(request_from("203.0.113.9", "198.51.100.1")) == "198.51.100.1"
    # A private address is no proxy unless the deployment lists it.
    assert client_address(request_from(PROXY, "198.51.100.1")) == PROXY


def proxy_networks_read_from(**environment: str) -> list[str]:
    """The proxy networks a deployment reads from this environment."""
    (networks,) = settings_values(
        ["SPECBOARD_TRUSTED_PROXY_NETWORKS"], dropping=("SPECBOARD_TRUSTED_PROXY",), **environment
    )
    return networks


def test_by_default_no_network_is_a_proxys_so_loopback_clients_rotating_the_header_are_limited(
    db, settings
):
    """Behind SPECBOARD_TRUSTED_PROXIES=1 with the default networks, a client on loopback or a
    private range (a docker port mapping's gateway, another container) is not a proxy: it
    cannot sign up twelve times under twelve addresses of its choosing."""
    settings.SPECBOARD_TRUSTED_PROXY_NETWORKS = tuple(proxy_networks_read_from())
    settings.SPECBOARD_TRUSTED_PROXIES = 1
    settings.ACCOUNT_RATE_LIMITS = settings.ACCOUNT_RATE_LIMITS | {"signup": "10/h/ip"}

    for first, peer in ((0, "127.0.0.1"), (100, "172.17.0.1")):
        codes = [
            sign_up(index, peer=peer, forwarded=f"198.51.100.{index}")
            for index in range(first, first + 12)
        ]
        assert codes.count(302) == 10 and codes[-2:] == [429, 429], peer


def test_the_proxy_networks_the_operator_lists_are_read_strictly():
    assert proxy_networks_read_from() == []
    assert proxy_networks_read_from(
        SPECBOARD_TRUSTED_PROXY_NETWORKS="10.0.0.0/8, 127.0.0.1,fd00::/8"
    ) == ["10.0.0.0/8", "127.0.0.1/32", "fd00::/8"]
    for malformed in ("10.0.0.1/8", "10.0.0.0/33", "proxy.example", "10.0.0.0/8,,127.0.0.1/32"):
        stopped = refusal(
            dropping=("SPECBOARD_TRUSTED_PROXY",), SPECBOARD_TRUSTED_PROXY_NETWORKS=malformed
        )
        assert "SPECBOARD_TRUSTED_PROXY_NETWORKS must be comma-separated networks" in stopped


def test_a_proxy_count_without_proxy_networks_is_warned_about(settings):
    from django.core import checks

    settings.SPECBOARD_TRUSTED_PROXIES = 1
    settings.SPECBOARD_TRUSTED_PROXY_NETWORKS = ()
    assert "specboard.W002" in [m.id for m in checks.run_checks(tags=["security"])]
    settings.SPECBOARD_TRUSTED_PROXY_NETWORKS = ("10.0.0.2/32",)
    assert "specboard.W002" not in [m.id for m in checks.run_checks(tags=["security"])]


def test_addresses_inside_one_ipv6_block_count_as_one(settings):
    settings.SPECBOARD_TRUSTED_PROXIES = 1
    rotated = {
        client_address(request_from(PROXY, f"2001:db8:1:2:{i:x}::{i:x}")) for i in range(1, 50)
    }
    assert rotated == {"2001:db8:1:2::"}


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


# The lockout counts per account (tests/leaderboard/accounts/test_sign_in_limits.py); the
# address a client is counted under shows in the per-address throttle: this many failures,
# whichever accounts they tried (no account's own lockout is reached: one guess each).
ADDRESS_FAILURES = 20


def guesses(*, peer: str, forwarded: Callable[[int], str | None] = lambda index: None) -> None:
    for index in range(ADDRESS_FAILURES):
        sign_in(f"nobody{index}", "wrong", peer=peer, forwarded=forwarded(index))


def test_without_a_proxy_a_client_rotating_x_forwarded_for_is_still_throttled(accounts, settings):
    assert settings.SIGNIN_ADDRESS_FAILURES == ADDRESS_FAILURES
    guesses(peer="192.0.2.9", forwarded=lambda index: f"198.51.100.{index}")

    # The address is throttled whatever the next request claims to come from.
    assert not sign_in("grace", PASSWORD, peer="192.0.2.9", forwarded="198.51.100.200")
    # And nobody was throttled under the addresses it claimed.
    assert sign_in("grace", PASSWORD, peer="198.51.100.1")


def test_behind_a_proxy_each_client_is_counted_under_its_own_address(accounts, settings):
    settings.SPECBOARD_TRUSTED_PROXIES = 1
    # The attacker's spoofed entries come first; the proxy appends the real address.
    guesses(peer=PROXY, forwarded=lambda index: f"7.7.7.{index}, 192.0.2.9")

    assert not sign_in("grace", PASSWORD, peer=PROXY, forwarded="192.0.2.9")
    # Another visitor through the same proxy is not throttled with it.
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


def test_the_api_throttles_would_count_an_anonymous_request_under_the_same_address(settings):
    """Every throttled API write needs a signed-in user today (counted by user, not address);
    a throttle on an anonymous request would read the same address as the sign-in limits."""
    from leaderboard.api.throttles import SubmissionThrottle

    throttle = SubmissionThrottle()
    request = request_from(PROXY, "1.2.3.4, 198.51.100.1")
    assert throttle.get_ident(request) == PROXY
    settings.SPECBOARD_TRUSTED_PROXIES = 1
    assert throttle.get_ident(request) == "198.51.100.1"


def test_a_tls_proxy_without_a_proxy_count_is_warned_about(settings):
    from django.core import checks

    settings.BEHIND_TLS_PROXY = True
    settings.SPECBOARD_TRUSTED_PROXIES = 0
    assert [m.id for m in checks.run_checks(tags=["security"])].count("specboard.W001") == 1
    settings.SPECBOARD_TRUSTED_PROXIES = 1
    assert "specboard.W001" not in [m.id for m in checks.run_checks(tags=["security"])]


def test_every_address_key_fits_an_address_column_on_postgresql(settings):
    """axes stores the address in a GenericIPAddressField: PostgreSQL's adapter must take it."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    adapt = DatabaseOperations(None).adapt_ipaddressfield_value
    settings.SPECBOARD_TRUSTED_PROXIES = 1
    for peer, forwarded in (
        ("2001:db8::5", None),
        (PROXY, "[2001:db8::1]:443"),
        (PROXY, "::ffff:198.51.100.1"),
        (PROXY, "198.51.100.1:5555"),
    ):
        key = client_address(request_from(peer, forwarded))
        assert key is not None and adapt(key) is not None, key


def test_an_ipv6_client_is_throttled_per_block_and_never_gets_a_server_error(accounts):
    for index in range(ADDRESS_FAILURES):
        client = Client()
        response = client.post(
            "/accounts/login/",
            {"login": f"nobody{index}", "password": "wrong"},
            REMOTE_ADDR=f"2001:db8:7:7::{index + 1:x}",
        )
        assert response.status_code in (200, 429)
    # Another address of the same /64 is the same client: throttled.
    assert not sign_in("grace", PASSWORD, peer="2001:db8:7:7::99")
    assert sign_in("grace", PASSWORD, peer="2001:db8:7:8::1")
