"""The account forms (leaderboard.accounts.forms): a password change offers to revoke the
account's API tokens, a reset revokes them unless the owner keeps them, and a sign-in name
longer than any account is a field error, never counted as an attempt."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from allauth.account.models import EmailAddress
from axes.models import AccessAttempt
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.accounts.forms import MAX_LOGIN_LENGTH
from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.services import issue_api_token

PASSWORD = "correct-horse-battery"
NEW_PASSWORD = "staple-purple-ocean-42"


def works(key: str) -> bool:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api.get("/api/v1/allowance").status_code == 200


@pytest.fixture
def keys(user) -> list[str]:
    return [issue_api_token(user=user, name=name).key for name in ("laptop", "ci")]


def change_password(user, **choice: str):
    client = Client()
    client.force_login(user)
    return client.post(
        "/accounts/password/change/",
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD} | choice,
        follow=True,
    )


def test_the_change_page_offers_to_revoke_the_live_tokens(user, keys):
    client = Client()
    client.force_login(user)
    page = client.get("/accounts/password/change/").content.decode()

    box = re.search(r'<input[^>]*name="revoke_api_tokens"[^>]*>', page)
    assert box and "checked" not in box.group(0)
    assert "Also revoke my 2 API tokens" in page


def test_a_password_change_revokes_the_tokens_when_asked(user, keys):
    page = change_password(user, revoke_api_tokens="on").content.decode()

    assert "2 API token(s) revoked" in page
    assert not any(works(key) for key in keys)


def test_a_password_change_keeps_the_tokens_unless_asked(user, keys):
    change_password(user)

    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert all(works(key) for key in keys)


def test_an_account_without_tokens_is_offered_nothing(user):
    client = Client()
    client.force_login(user)
    assert "revoke_api_tokens" not in client.get("/accounts/password/change/").content.decode()
    assert change_password(user).status_code == 200


@pytest.fixture
def reset_form(user, mailoutbox) -> tuple[Client, str]:
    """A browser at the reset link's form, and the form's address."""
    EmailAddress.objects.create(user=user, email="ada@example.org", verified=True, primary=True)
    browser = Client()
    browser.post("/accounts/password/reset/", {"email": "ada@example.org"})
    link = re.search(r"https?://\S+/accounts/password/reset/key/\S+", mailoutbox[0].body)
    page = browser.get(urlsplit(link.group(0)).path, follow=True)
    return browser, page.redirect_chain[-1][0]


def test_a_reset_revokes_the_tokens_by_default(keys, reset_form):
    browser, form = reset_form
    page = browser.get(form).content.decode()
    box = re.search(r'<input[^>]*name="keep_api_tokens"[^>]*>', page)
    assert box and "checked" not in box.group(0)

    done = browser.post(form, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert done.status_code == 302
    assert not any(works(key) for key in keys)
    assert ApiToken.objects.filter(revoked_at=None).count() == 0


def test_a_reset_keeps_the_tokens_when_the_owner_says_so(user, keys, reset_form):
    browser, form = reset_form
    browser.post(
        form, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "keep_api_tokens": "on"}
    )

    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert all(works(key) for key in keys)


# The sign-in form -----------------------------------------------------------------------------


@pytest.mark.parametrize("length", [MAX_LOGIN_LENGTH + 1, 300, 20_000])
def test_a_sign_in_name_longer_than_any_account_is_a_field_error(db, user, length):
    response = Client().post("/accounts/login/", {"login": "x" * length, "password": "nope"})

    assert response.status_code == 200
    assert f"at most {MAX_LOGIN_LENGTH} characters" in response.content.decode()
    assert not AccessAttempt.objects.filter(username__startswith="x" * 200).exists()
