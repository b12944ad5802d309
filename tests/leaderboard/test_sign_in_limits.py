"""Sign-in: failed attempts are limited per account and per address, with a clear message, and
counted in the database, so every web process sees the same count."""

from __future__ import annotations

import pytest
from django.test import Client

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


def test_the_lockout_holds_for_the_account_from_another_address_and_another_process(accounts):
    for _ in range(5):
        sign_in(Client(), "ada", "wrong", address="198.51.100.1")

    # A fresh client (another browser, another web process: the count is in the database).
    other = Client()
    response = sign_in(other, "ada", PASSWORD, address="198.51.100.2")
    assert not signed_in(other) and response.status_code == 429


def test_the_lockout_holds_for_the_address_against_other_accounts(accounts):
    for name in ("ada", "grace", "nobody", "root", "admin"):
        sign_in(Client(), name, "wrong", address="192.0.2.9")

    client = Client()
    sign_in(client, "grace", PASSWORD, address="192.0.2.9")
    assert not signed_in(client)
    elsewhere = Client()
    sign_in(elsewhere, "grace", PASSWORD, address="192.0.2.10")
    assert signed_in(elsewhere)


def test_a_few_mistakes_then_the_right_password_signs_in(accounts):
    client = Client()
    for _ in range(3):
        sign_in(client, "ada", "wrong")
    sign_in(client, "ada", PASSWORD)
    assert signed_in(client)
