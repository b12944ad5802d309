"""Password resets (leaderboard.accounts.password_reset): asking for one changes no account, so
an account an admin made (an `email`, no address record) still signs in without confirming
anything, before and after its owner finishes the reset."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from allauth.account.models import EmailAddress
from django.test import Client

from leaderboard.accounts.password_reset import ResetTokenGenerator

PASSWORD = "correct-horse-battery"
NEW_PASSWORD = "staple-purple-ocean-42"


def sign_in(login: str, password: str) -> tuple[bool, str | None]:
    """Whether the sign-in took, and where it sent the browser."""
    client = Client()
    response = client.post("/accounts/login/", {"login": login, "password": password})
    return "_auth_user_id" in client.session, response.headers.get("Location")


def reset_link(message) -> str:
    found = re.search(r"https?://\S+/accounts/password/reset/key/\S+", message.body)
    assert found, message.body
    return urlsplit(found.group(0)).path


@pytest.fixture
def made_by_an_admin(django_user_model):
    return django_user_model.objects.create_user("ada", "ada@example.org", PASSWORD)


def test_an_anonymous_reset_request_leaves_an_admin_made_account_signing_in_as_before(
    made_by_an_admin, mailoutbox
):
    stranger = Client()
    assert (
        stranger.post("/accounts/password/reset/", {"email": "ada@example.org"}).status_code == 302
    )
    # The link was mailed to the account's address, and nothing was added to the account.
    [message] = mailoutbox
    assert message.to == ["ada@example.org"]
    assert not EmailAddress.objects.exists()
    assert sign_in("ada", PASSWORD) == (True, "/")
    assert sign_in("ada@example.org", PASSWORD) == (True, "/")


def test_the_owner_who_finishes_the_reset_signs_in_with_the_new_password(
    made_by_an_admin, mailoutbox
):
    owner = Client()
    owner.post("/accounts/password/reset/", {"email": "ada@example.org"})
    form_page = owner.get(reset_link(mailoutbox[0]), follow=True)
    set_password = form_page.redirect_chain[-1][0]
    done = owner.post(set_password, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert done.status_code == 302

    assert not EmailAddress.objects.exists()
    assert sign_in("ada", NEW_PASSWORD) == (True, "/")
    assert sign_in("ada@example.org", NEW_PASSWORD) == (True, "/")
    assert sign_in("ada", PASSWORD)[0] is False


def test_an_account_an_earlier_reset_request_gave_an_unconfirmed_address_still_signs_in(
    made_by_an_admin,
):
    """What allauth's own reset links left on accounts before this site's generator."""
    EmailAddress.objects.create(
        user=made_by_an_admin, email="ada@example.org", verified=False, primary=False
    )
    assert sign_in("ada", PASSWORD) == (True, "/")


def test_an_account_that_signed_up_still_confirms_its_address_first(db, django_user_model):
    grace = django_user_model.objects.create_user("grace", "grace@example.org", PASSWORD)
    EmailAddress.objects.create(user=grace, email="grace@example.org", verified=False, primary=True)
    assert sign_in("grace", PASSWORD) == (False, "/accounts/confirm-email/")


def test_a_reset_link_goes_stale_once_the_password_or_an_address_changes(made_by_an_admin):
    tokens = ResetTokenGenerator()
    token = tokens.make_token(made_by_an_admin)
    assert tokens.check_token(made_by_an_admin, token)

    EmailAddress.objects.create(user=made_by_an_admin, email="ada@elsewhere.example")
    assert not tokens.check_token(made_by_an_admin, token)
    token = tokens.make_token(made_by_an_admin)
    made_by_an_admin.set_password(NEW_PASSWORD)
    made_by_an_admin.save()
    assert not tokens.check_token(made_by_an_admin, token)
