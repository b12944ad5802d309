"""Accounts people make themselves (django-allauth): sign-up with a confirmation email, sign-in by
name or address, sign-out, password change and reset, and sign-ups and resets limited per
address in the shared cache; hostile names and addresses refused as forms, signing nobody in."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from urllib.parse import urlsplit

import pytest
from allauth.account.models import EmailAddress
from django.test import Client

from leaderboard.accounts.forms import MAX_LOGIN_LENGTH

PASSWORD = "correct-horse-battery"
NEW_PASSWORD = "staple-purple-ocean-42"
ADDRESS = "203.0.113.50"


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def sign_up(client: Client, username: str, email: str, address: str = ADDRESS):
    return client.post(
        "/accounts/signup/",
        {"email": email, "username": username, "password1": PASSWORD, "password2": PASSWORD},
        REMOTE_ADDR=address,
    )


def sign_in(client: Client, login: str, password: str):
    return client.post("/accounts/login/", {"login": login, "password": password})


def link_in(message, path: str) -> str:
    """The path of the site link in a sent email that starts with `path`."""
    found = re.search(r"https?://\S+", message.body)
    assert found, message.body
    link = urlsplit(found.group(0)).path
    assert link.startswith(path), link
    return link


def test_sign_up_mails_a_link_and_the_account_signs_in_only_once_it_is_confirmed(
    db, client, mailoutbox, django_user_model
):
    response = sign_up(client, "grace", "grace@example.org")

    assert response.status_code == 302
    assert response.headers["Location"] == "/accounts/confirm-email/"
    assert not signed_in(client)
    assert django_user_model.objects.filter(username="grace", email="grace@example.org").exists()
    [message] = mailoutbox
    assert message.to == ["grace@example.org"]
    assert message.subject.startswith("[Specboard] ")
    link = link_in(message, "/accounts/confirm-email/")

    early = Client()
    refused = sign_in(early, "grace", PASSWORD)
    assert not signed_in(early)
    assert refused.headers["Location"] == "/accounts/confirm-email/"

    # The link shows a page with a button (mail scanners that follow links confirm nothing).
    page = client.get(link)
    assert page.status_code == 200 and b"grace@example.org" in page.content
    assert not EmailAddress.objects.get(email="grace@example.org").verified
    assert client.post(link).status_code == 302
    assert EmailAddress.objects.get(email="grace@example.org").verified

    by_address = Client()
    assert sign_in(by_address, "grace@example.org", PASSWORD).status_code == 302
    assert signed_in(by_address)
    by_name = Client()
    sign_in(by_name, "grace", PASSWORD)
    assert signed_in(by_name)


def test_a_weak_password_is_an_inline_error_that_keeps_what_was_typed_and_makes_nobody(
    db, client, mailoutbox, django_user_model
):
    response = client.post(
        "/accounts/signup/",
        {
            "email": "grace@example.org",
            "username": "grace",
            "password1": "password",
            "password2": "password",
        },
    )

    assert response.status_code == 200
    page = response.content.decode()
    assert 'class="field has-error" id="field-password1"' in page
    assert "too common" in page
    assert 'value="grace"' in page and 'value="grace@example.org"' in page
    assert not django_user_model.objects.filter(username="grace").exists()
    assert mailoutbox == []


def test_a_sign_up_with_a_taken_address_makes_nobody_and_tells_only_the_addresses_owner(
    db, client, mailoutbox, django_user_model
):
    """The page answers as for any sign-up (nobody learns which addresses have accounts); the
    address's owner gets a mail saying someone tried."""
    grace = django_user_model.objects.create_user("grace", "grace@example.org", PASSWORD)
    EmailAddress.objects.create(user=grace, email="grace@example.org", verified=True, primary=True)
    response = sign_up(client, "mallory", "grace@example.org", address="198.51.100.3")

    assert response.status_code == 302
    assert response.headers["Location"] == "/accounts/confirm-email/"
    assert not django_user_model.objects.filter(username="mallory").exists()
    [message] = mailoutbox
    assert message.to == ["grace@example.org"]
    assert "already" in message.body


def test_a_sign_up_with_a_taken_user_name_answers_as_a_new_one_and_tells_only_the_address(
    db, mailoutbox, django_user_model
):
    """Nobody learns from the page which user names are taken (a list of names to lock out);
    the address given gets a mail saying the name is taken, and no account is made."""
    django_user_model.objects.create_user("grace", "grace@example.org", PASSWORD)

    pages = {}
    for username, email in (("grace", "mallory@example.org"), ("heidi", "heidi@example.org")):
        client = Client()
        response = sign_up(client, username, email, address="198.51.100.3")
        assert response.status_code == 302
        assert response.headers["Location"] == "/accounts/confirm-email/"
        page = client.get(response.headers["Location"]).content.decode()
        pages[username] = re.sub(r"name=\"csrfmiddlewaretoken\" value=\"\w+\"", "", page)
        pages[username] = pages[username].replace(email, "ADDRESS")
    assert pages["grace"] == pages["heidi"]
    assert "ADDRESS" in pages["grace"]

    assert list(django_user_model.objects.values_list("username", flat=True).order_by("pk")) == [
        "grace",
        "heidi",
    ]
    taken, confirm = mailoutbox
    assert taken.to == ["mallory@example.org"]
    assert '"grace"' in taken.body and "No account was made" in taken.body
    assert taken.subject.startswith("[Specboard] ")
    assert confirm.to == ["heidi@example.org"]
    # The one who owns the address can sign up with another name.
    assert sign_up(Client(), "mallory", "mallory@example.org").status_code == 302
    assert django_user_model.objects.filter(username="mallory").exists()


def test_a_wrong_password_is_an_inline_error_and_signs_nobody_in(client, user):
    response = sign_in(client, "ada", "not-the-password")

    assert response.status_code == 200
    assert "not correct" in response.content.decode()
    assert not signed_in(client)


def test_an_account_an_admin_made_without_an_address_still_signs_in_and_out(client, user):
    response = sign_in(client, "ada", PASSWORD)
    assert response.status_code == 302 and signed_in(client)

    assert client.post("/accounts/logout/").status_code == 302
    assert not signed_in(client)


def test_the_old_sign_in_and_sign_out_names_are_allauths_pages(db, client):
    from django.urls import reverse

    assert reverse("login") == reverse("account_login") == "/accounts/login/"
    assert reverse("logout") == reverse("account_logout") == "/accounts/logout/"
    page = client.get("/accounts/login/").content.decode()
    assert 'name="login"' in page and 'href="/accounts/signup/"' in page


def test_a_password_change_needs_the_old_password(client, user):
    client.force_login(user)
    wrong = client.post(
        "/accounts/password/change/",
        {"oldpassword": "guess", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert wrong.status_code == 200 and "current password" in wrong.content.decode()

    right = client.post(
        "/accounts/password/change/",
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert right.status_code == 302
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)


def test_a_password_reset_mails_a_link_that_sets_a_new_password_once(
    db, client, django_user_model, mailoutbox
):
    user = django_user_model.objects.create_user("lin", "lin@example.org", PASSWORD)
    EmailAddress.objects.create(user=user, email="lin@example.org", verified=True, primary=True)

    assert client.post("/accounts/password/reset/", {"email": "lin@example.org"}).status_code == 302
    [message] = mailoutbox
    link = link_in(message, "/accounts/password/reset/key/")
    # allauth moves the key out of the address into the session before showing the form.
    form_page = client.get(link, follow=True)
    assert form_page.status_code == 200
    set_password = form_page.redirect_chain[-1][0]
    done = client.post(set_password, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert done.status_code == 302

    assert sign_in(Client(), "lin", PASSWORD).status_code == 200
    fresh = Client()
    sign_in(fresh, "lin@example.org", NEW_PASSWORD)
    assert signed_in(fresh)
    # The link was for one use.
    again = Client().get(link, follow=True)
    assert "invalid" in again.content.decode().lower()


def test_a_reset_for_an_unknown_address_says_nothing_different_and_mails_nobody_an_account(
    db, client, mailoutbox
):
    response = client.post("/accounts/password/reset/", {"email": "nobody@example.org"})
    assert response.status_code == 302
    assert all("password/reset/key" not in message.body for message in mailoutbox)


@pytest.fixture
def tight_limits(settings):
    settings.ACCOUNT_RATE_LIMITS = settings.ACCOUNT_RATE_LIMITS | {
        "signup": "2/h/ip",
        "reset_password": "3/h/ip,2/h/key",
    }


def test_sign_ups_from_one_address_are_limited_and_others_are_not(
    db, tight_limits, mailoutbox, django_user_model
):
    codes = [
        sign_up(Client(), f"user{index}", f"user{index}@example.org").status_code
        for index in range(3)
    ]

    assert codes == [302, 302, 429]
    assert not django_user_model.objects.filter(username="user2").exists()
    assert len(mailoutbox) == 2
    assert (
        sign_up(Client(), "user2", "user2@example.org", address="198.51.100.9").status_code == 302
    )


def test_password_resets_are_limited_per_address_and_per_account(
    db, tight_limits, client, django_user_model, mailoutbox
):
    django_user_model.objects.create_user("lin", "lin@example.org", PASSWORD)

    def reset(email: str, address: str) -> int:
        return (
            Client()
            .post("/accounts/password/reset/", {"email": email}, REMOTE_ADDR=address)
            .status_code
        )

    assert [reset("lin@example.org", "192.0.2.1") for _ in range(2)] == [302, 302]
    # A third for the same account, from elsewhere: refused, and nothing is sent.
    third = Client().post(
        "/accounts/password/reset/", {"email": "lin@example.org"}, REMOTE_ADDR="192.0.2.2"
    )
    assert third.status_code == 429 and "Too many requests" in third.content.decode()
    assert len(mailoutbox) == 2
    # The address that asked twice may ask once more, for anyone, then no more.
    assert reset("other@example.org", "192.0.2.1") == 302
    assert reset("third@example.org", "192.0.2.1") == 429


SHARED_CACHE = "redis://127.0.0.1:6379/8"


# A real Redis and a second Python process: the end-to-end tier's (the fast tier needs neither).
@pytest.mark.e2e
def test_the_sign_up_limit_is_kept_in_the_shared_cache_so_another_process_sees_it(
    db, settings, mailoutbox
):
    """Two sign-ups here use up the address's allowance in Redis (what production's CACHE_URL
    points at); a separate process with the same settings finds it used up."""
    import redis

    redis.Redis.from_url(SHARED_CACHE).flushdb()
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",  # what CACHE_URL sets
            "LOCATION": SHARED_CACHE,
        }
    }
    settings.ACCOUNT_RATE_LIMITS = settings.ACCOUNT_RATE_LIMITS | {"signup": "2/h/ip"}
    for index in range(2):
        assert sign_up(Client(), f"user{index}", f"user{index}@example.org").status_code == 302

    script = (
        "import django; django.setup()\n"
        "from allauth.core import ratelimit\n"
        "from django.test import RequestFactory\n"
        "def asks(address):\n"
        "    request = RequestFactory().post('/accounts/signup/', REMOTE_ADDR=address)\n"
        "    return ratelimit.consume(request, action='signup', dry_run=True)\n"
        f"print(asks('{ADDRESS}'), asks('198.51.100.77'))\n"
    )
    seen = subprocess.run(
        [sys.executable, "-c", script],
        env=os.environ
        | {
            "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
            "CACHE_URL": SHARED_CACHE,
            "SPECBOARD_SIGNUP_RATE": "2/h/ip",
            "DEBUG": "1",
        },
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert seen == ["False", "True"]
    redis.Redis.from_url(SHARED_CACHE).flushdb()


@pytest.mark.parametrize("login", ["\x00", "a\x00@b.co", "é@é.é", "x" * MAX_LOGIN_LENGTH])
def test_hostile_sign_ins_and_sign_ups_are_refused_as_forms(db, user, login):
    anonymous = Client()
    for path, body in [
        ("/accounts/login/", {"login": login, "password": "nope"}),
        ("/accounts/signup/", {"username": login, "email": login, "password1": login}),
        ("/accounts/password/reset/", {"email": login}),
    ]:
        response = anonymous.post(path, body)
        assert response.status_code in (200, 302, 429), (path, response.status_code)
    assert not anonymous.session.get("_auth_user_id")
