"""Sign-in: failed attempts lock an account, from whatever addresses they came, with a clear
message, counted in the database so every web process sees the same count; the address is
throttled across accounts. The owner clears a lockout from a new session by finishing a password
reset from the mailed link, and the lockout holds however the account is typed
(accounts.selectors.sign_in_name: folded and bounded)."""

from __future__ import annotations

import re

import pytest
from allauth.account.models import EmailAddress
from axes.models import AccessAttempt
from django.test import Client

from leaderboard.accounts.selectors import sign_in_name

PASSWORD = "correct-horse-battery"


def sign_in(client: Client, username: str, password: str, address: str = "203.0.113.7"):
    return client.post(
        "/accounts/login/",
        {"login": username, "password": password},
        REMOTE_ADDR=address,
    )


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.fixture
def accounts(django_user_model):
    return [
        django_user_model.objects.create_user(username=name, password=PASSWORD)
        for name in ("ada", "grace")
    ]


def test_forty_wrong_passwords_then_the_right_one_does_not_sign_in(accounts, settings):
    client = Client()
    for _ in range(40):
        assert sign_in(client, "ada", "wrong").status_code in (200, 429)
    response = sign_in(client, "ada", PASSWORD)

    assert not signed_in(client)
    assert response.status_code == 429
    assert b"Too many failed sign-ins" in response.content


def test_wrong_passwords_spread_over_many_addresses_lock_the_account_everywhere(accounts):
    # One guess from each of five addresses: a count per (account, address) never locked it.
    for index in range(5):
        sign_in(Client(), "ada", "wrong", address=f"198.51.100.{index + 1}")

    owner = Client()
    response = sign_in(owner, "ada", PASSWORD, address="203.0.113.50")
    assert not signed_in(owner) and response.status_code == 429
    assert b"Too many failed sign-ins" in response.content
    # Another account is not touched.
    other = Client()
    sign_in(other, "grace", PASSWORD, address="198.51.100.1")
    assert signed_in(other)


def reset_link(message) -> str:
    found = re.search(r"https?://\S+(/accounts/password/reset/key/\S+)", message.body)
    assert found, message.body
    return found.group(1)


def test_the_owner_clears_a_strangers_lockout_by_finishing_a_password_reset(accounts, mailoutbox):
    ada = accounts[0]
    ada.email = "ada@example.org"
    ada.save()
    for _ in range(5):
        sign_in(Client(), "ada", "wrong", address="198.51.100.1")
    owner = Client()
    assert sign_in(owner, "ada", PASSWORD, address="203.0.113.50").status_code == 429

    # A new session at the owner's address: the reset link mailed to the account's address.
    owner = Client(REMOTE_ADDR="203.0.113.50")
    owner.post("/accounts/password/reset/", {"email": "ada@example.org"})
    form_page = owner.get(reset_link(mailoutbox[0]), follow=True)
    new_password = "staple-purple-ocean-42"
    done = owner.post(
        form_page.redirect_chain[-1][0], {"password1": new_password, "password2": new_password}
    )
    assert done.status_code == 302

    assert not AccessAttempt.objects.filter(username="ada").exists()
    browser = Client()
    sign_in(browser, "ada", new_password, address="203.0.113.50")
    assert signed_in(browser)


def test_an_address_guessing_at_many_accounts_is_throttled_for_all_of_them(accounts, settings):
    failures = settings.SIGNIN_ADDRESS_FAILURES
    # One guess each at many accounts: no account reaches its own lockout.
    for index in range(failures):
        sign_in(Client(), f"user{index}", "wrong", address="192.0.2.9")

    client = Client()
    response = sign_in(client, "grace", PASSWORD, address="192.0.2.9")
    assert not signed_in(client)
    assert response.status_code == 429
    assert "Too many failed sign-ins" in response.content.decode()
    elsewhere = Client()
    sign_in(elsewhere, "grace", PASSWORD, address="192.0.2.10")
    assert signed_in(elsewhere)


def test_fewer_guesses_from_one_address_throttle_nobody(accounts, settings):
    for index in range(settings.SIGNIN_ADDRESS_FAILURES - 1):
        sign_in(Client(), f"user{index}", "wrong", address="192.0.2.9")

    client = Client()
    sign_in(client, "grace", PASSWORD, address="192.0.2.9")
    assert signed_in(client)


def test_a_few_mistakes_then_the_right_password_signs_in(accounts):
    client = Client()
    for _ in range(3):
        sign_in(client, "ada", "wrong")
    sign_in(client, "ada", PASSWORD)
    assert signed_in(client)


@pytest.mark.parametrize(
    ("guessed_as", "then_as"),
    [
        ("ada@example.com", "ada"),
        ("ada", "ada@example.com"),
        ("ada", "ADA"),
        ("Ada", "aDa"),
        ("ada@example.com", "ADA@Example.com"),
    ],
)
def test_the_lockout_holds_however_the_account_is_typed(user, guessed_as, then_as):
    """Wrong passwords lock the account, not the spelling that was typed."""
    user.email = "ada@example.com"
    user.save()
    EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
    for _ in range(5):
        Client().post(
            "/accounts/login/",
            {"login": guessed_as, "password": "wrong"},
            REMOTE_ADDR="198.51.100.1",
        )

    browser = Client()
    response = browser.post(
        "/accounts/login/",
        {"login": then_as, "password": "correct-horse-battery"},
        REMOTE_ADDR="198.51.100.1",
    )

    assert response.status_code == 429
    assert "_auth_user_id" not in browser.session
    assert set(AccessAttempt.objects.values_list("username", flat=True)) == {"ada"}


@pytest.mark.parametrize(
    ("typed", "counted_as"),
    [("nobody\x00", "nobody"), ("NoBody", "nobody"), ("x" * 20_000, "x" * 255), ("", "")],
)
def test_a_sign_in_name_that_is_no_account_is_counted_folded_and_bounded(db, typed, counted_as):
    assert sign_in_name(None, {"username": typed}) == counted_as
