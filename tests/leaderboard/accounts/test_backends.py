"""The sign-in backend (leaderboard.accounts.backends): one password hash per attempt, whether or
not an account answers to the typed name or address, so timing tells nobody which exist."""

from __future__ import annotations

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth.hashers import MD5PasswordHasher
from django.test import Client

PASSWORD = "correct-horse-battery"


@pytest.fixture
def hashes(monkeypatch) -> list[str]:
    """Every password hash computed (the tests' hasher is MD5: tests/support/fixtures.py)."""
    computed: list[str] = []
    encode = MD5PasswordHasher.encode

    def counted(self, password, salt):
        computed.append(password)
        return encode(self, password, salt)

    monkeypatch.setattr(MD5PasswordHasher, "encode", counted)
    return computed


@pytest.fixture
def accounts(django_user_model):
    ada = django_user_model.objects.create_user("ada", "ada@example.org", PASSWORD)
    EmailAddress.objects.create(user=ada, email="ada@example.org", verified=True, primary=True)
    # An admin-made account: an `email` field, no address record.
    django_user_model.objects.create_user("lin", "lin@example.org", PASSWORD)
    # Signed up through a provider: no usable password.
    django_user_model.objects.create_user("hf-user", "hf@example.org", None)


def sign_in(login: str, password: str, address: str) -> Client:
    client = Client()
    client.post("/accounts/login/", {"login": login, "password": password}, REMOTE_ADDR=address)
    return client


@pytest.mark.parametrize(
    "login",
    [
        "ada",
        "ADA",
        "ada@example.org",
        "Ada@Example.org",
        "lin@example.org",
        "hf-user",
        "hf@example.org",
        "nobody",
        "nobody@example.org",
    ],
)
def test_a_wrong_password_costs_one_hash_whether_or_not_the_account_exists(accounts, hashes, login):
    client = sign_in(login, "wrong-guess", address="198.51.100.7")

    assert "_auth_user_id" not in client.session
    assert hashes == ["wrong-guess"]


@pytest.mark.parametrize("login", ["ada", "ada@example.org", "lin", "lin@example.org"])
def test_the_right_password_signs_in_by_name_or_address(accounts, login):
    assert "_auth_user_id" in sign_in(login, PASSWORD, address="198.51.100.8").session


def test_a_user_name_that_is_someone_elses_address_does_not_take_it_over(
    accounts, django_user_model
):
    django_user_model.objects.create_user("ada@example.org", "m@example.net", "mallory-pass-1")

    signed_in = sign_in("ada@example.org", PASSWORD, address="198.51.100.9")
    assert signed_in.session["_auth_user_id"] == str(
        django_user_model.objects.get(username="ada").pk
    )
    assert (
        "_auth_user_id" not in sign_in("ada@example.org", "mallory-pass-1", "198.51.100.9").session
    )


def test_an_inactive_account_does_not_sign_in_with_its_password(accounts, django_user_model):
    django_user_model.objects.filter(username="lin").update(is_active=False)
    assert "_auth_user_id" not in sign_in("lin", PASSWORD, address="198.51.100.10").session


def test_the_admin_signs_in_through_the_same_backend_and_keeps_its_permissions(
    db, django_user_model, hashes
):
    django_user_model.objects.create_superuser("root", "root@example.org", PASSWORD)
    hashes.clear()
    admin = Client()
    wrong = admin.post("/admin/login/", {"username": "nobody", "password": "guess"})
    assert wrong.status_code == 200 and hashes == ["guess"]

    admin.post("/admin/login/?next=/admin/", {"username": "root", "password": PASSWORD})
    assert admin.get("/admin/auth/user/").status_code == 200
