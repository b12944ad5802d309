"""One allowance for the form and the API: submissions an hour, tokens a job and tokens a day,
counted from the jobs in the database."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard import selectors
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Job

CONFIG = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 16}}
FORM = {
    "target_model": "tiny-qwen3.gguf", "protocol": "quick", "runs": "2", "n_predict": "16",
    "warmup": "1", "flash_attn": "auto", "cache_type_k": "f16", "cache_type_v": "f16",
}  # fmt: skip


@pytest.fixture
def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_api_token(user=user, name='tests').key}")
    return client


def submit_by_api(api: APIClient, hardware, config: dict = CONFIG):
    return api.post(
        "/api/v1/submissions", {"hardware": hardware.slug, "config": config}, format="json"
    )


def test_the_form_and_the_api_draw_on_one_submission_allowance(
    client, api, user, models, hardware, enqueued, settings
):
    settings.SPECBOARD_SUBMISSION_RATE = "4/hour"
    client.force_login(user)
    for index in range(2):
        assert client.post("/submit/", FORM | {"hardware": hardware.slug}).status_code == 302
        assert submit_by_api(api, hardware, CONFIG | {"threads": index + 1}).status_code == 201

    refused = submit_by_api(api, hardware)
    page = client.post("/submit/", FORM | {"hardware": hardware.slug})

    assert refused.status_code == 429 and 3590 <= int(refused.headers["Retry-After"]) <= 3601
    assert "used your 4 submissions" in refused.json()["detail"]
    assert page.status_code == 200 and b"used your 4 submissions" in page.content
    assert Job.objects.filter(owner=user, auto_scheduled=False).count() == 4
    assert api.get("/api/v1/allowance").json()["submissions_left"] == 0


def test_a_job_over_the_token_cap_is_refused_before_anything_is_queued(
    api, user, models, hardware, enqueued, settings
):
    settings.SPECBOARD_MAX_JOB_TOKENS = 10_000
    big = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 2000}}

    response = submit_by_api(api, hardware, big)

    assert (
        response.status_code == 429
        and "above the 10,000 one job may use" in response.json()["detail"]
    )
    assert not Job.objects.exists() and enqueued == []


def test_the_daily_token_allowance_counts_what_the_user_submitted_today(
    api, user, models, hardware, enqueued, settings
):
    settings.SPECBOARD_DAILY_TOKENS = 3_000
    first = submit_by_api(api, hardware, CONFIG | {"protocol": {"name": "quick", "n_predict": 200}})
    assert first.status_code == 201
    left = api.get("/api/v1/allowance").json()
    assert 0 < left["daily_tokens_left"] < 3_000 and left["daily_tokens_limit"] == 3_000

    second = submit_by_api(
        api, hardware, CONFIG | {"protocol": {"name": "quick", "n_predict": 200, "runs": 12}}
    )
    assert second.status_code == 429 and "tokens a day are left" in second.json()["detail"]
    assert Job.objects.filter(auto_scheduled=False).count() == 1


def test_the_submit_page_shows_what_is_left(client, user, models, hardware, settings):
    settings.SPECBOARD_SUBMISSION_RATE = "30/hour"
    client.force_login(user)
    page = client.get("/submit/").content.decode()
    assert "30 of 30 submissions left this hour" in page
    assert selectors.allowance(user=user).daily_tokens_left == settings.SPECBOARD_DAILY_TOKENS
