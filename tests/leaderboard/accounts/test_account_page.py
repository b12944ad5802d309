"""The account page: tokens listed, made (the key shown once, in the answer to the POST that
made it, and kept nowhere on the server) and revoked, with the user's jobs and what is left of
their allowance; forms need CSRF and show their errors inline; nobody sees or revokes another
user's tokens, model requests or jobs."""

from __future__ import annotations

import re

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.services import issue_api_token

CONFIG = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 16}}


@pytest.fixture
def signed_in(client, user) -> Client:
    client.force_login(user)
    return client


def key_on(page: str) -> str | None:
    found = re.search(r'<code id="new-token-key">([^<]+)</code>', page)
    return found.group(1) if found else None


def test_the_account_page_needs_a_signed_in_user(db, client):
    response = client.get("/account/")
    assert response.status_code == 302
    assert response.headers["Location"] == "/accounts/login/?next=/account/"


def test_a_new_token_is_shown_once_in_the_answer_that_made_it_and_then_never(signed_in, user):
    created = signed_in.post("/account/", {"name": "laptop client"})
    assert created.status_code == 200

    page = created.content.decode()
    key = key_on(page)
    assert key and key.startswith("sbk_")
    assert "laptop client" in page and "cannot be shown again" in page
    assert "no-store" in created.headers["Cache-Control"]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/allowance").status_code == 200

    again = signed_in.get("/account/").content.decode()
    assert key_on(again) is None and key not in again
    # The table names it by its prefix, and now it has been used.
    row = re.search(r"<tr>\s*<td>laptop client</td>.*?</tr>", again, re.S).group(0)
    assert f"<code>{key[:12]}…</code>" in row and "never" not in row


def test_a_new_tokens_key_is_stored_nowhere_on_the_server(signed_in, user):
    key = key_on(signed_in.post("/account/", {"name": "ci"}).content.decode())

    assert key
    stored = [str(session.get_decoded()) for session in Session.objects.all()]
    stored += [str(value) for value in signed_in.session.values()]
    assert stored and not any(key in text for text in stored)
    assert ApiToken.objects.get().key_sha256 != key


def test_a_token_without_a_name_is_an_inline_error_and_makes_nothing(signed_in):
    response = signed_in.post("/account/", {"name": ""})

    assert response.status_code == 400
    assert 'class="field has-error" id="field-name"' in response.content.decode()
    assert ApiToken.objects.count() == 0


def test_revoking_a_token_stops_it_at_once_and_the_page_says_so(signed_in, user):
    issued = issue_api_token(user=user, name="old laptop")

    response = signed_in.post(f"/account/tokens/{issued.token.id}/revoke/", follow=True)
    page = response.content.decode()
    assert "is revoked" in page and "revoked " in page
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {issued.key}")
    assert api.get("/api/v1/allowance").status_code == 401
    assert signed_in.get(f"/account/tokens/{issued.token.id}/revoke/").status_code == 405


def test_nobody_revokes_another_users_token(signed_in, django_user_model):
    other = django_user_model.objects.create_user("grace", password="x" * 12)
    issued = issue_api_token(user=other, name="grace's")

    assert signed_in.post(f"/account/tokens/{issued.token.id}/revoke/").status_code == 404
    assert ApiToken.objects.get().revoked_at is None


def test_the_forms_need_the_csrf_token(user):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    assert browser.post("/account/", {"name": "laptop"}).status_code == 403
    issued = issue_api_token(user=user, name="ci")
    assert browser.post(f"/account/tokens/{issued.token.id}/revoke/").status_code == 403
    assert ApiToken.objects.get().revoked_at is None


def test_the_page_shows_the_users_jobs_and_the_allowance_the_api_reports(
    signed_in, user, models, hardware, enqueued, settings
):
    settings.SPECBOARD_SUBMISSION_RATE = "7/hour"
    job = services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {issue_api_token(user=user, name='ci').key}")
    reported = api.get("/api/v1/allowance").json()

    page = signed_in.get("/account/").content.decode()
    assert f'href="/jobs/{job.pk}/"' in page and 'href="/jobs/"' in page
    allowance = re.sub(r"\s+", " ", re.search(r'<ul id="allowance">(.*?)</ul>', page, re.S)[1])
    assert reported["submissions_left"] == 6
    assert f"<strong>{reported['submissions_left']}</strong> of 7 left" in allowance
    assert f"<strong>{reported['daily_tokens_left']}</strong> of " in allowance


def test_nobody_sees_or_revokes_another_users_tokens_or_requests(
    user, django_user_model, models, hardware, enqueued
):
    issued = issue_api_token(user=user, name="ada-laptop")
    services.request_model(requester=user, hf_repo="ada-org/secret", hf_file="s.gguf")
    job = services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)
    eve = django_user_model.objects.create_user(username="eve", password="x" * 16)
    web, api = Client(), APIClient()
    web.force_login(eve)
    api.force_authenticate(eve)

    assert web.post(f"/account/tokens/{issued.token.id}/revoke/").status_code == 404
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is None
    for page in ["/account/", "/model-requests/", "/jobs/"]:
        text = web.get(page).content.decode()
        assert "ada-laptop" not in text and issued.token.prefix not in text
        assert "ada-org/secret" not in text
    assert api.get("/api/v1/model-requests").json()["count"] == 0
    assert api.get("/api/v1/submissions").json()["count"] == 0
    assert api.post(f"/api/v1/jobs/{job.pk}/cancel").status_code in (403, 404)
    assert web.post(f"/jobs/{job.pk}/cancel/").status_code in (403, 404)
    job.refresh_from_db()
    assert job.is_active
