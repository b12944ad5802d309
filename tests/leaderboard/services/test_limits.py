"""One allowance for the form and the API (services.limits, leaderboard.allowances): submissions an
hour, tokens a job and tokens a day, counted from the jobs in the database (each job's token
budget kept when it is submitted); a job that measures its paired baseline beside itself is
charged for both sections' tokens."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import selectors, services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Job
from leaderboard.services.limits import check_allowance
from runner.config import BenchmarkConfig, parse_stored_config
from runner.protocols import job_token_budget, token_budget
from tests.support.baselines import DRAFT_SIMPLE

# Synthetic acceptance does not measure its baseline beside itself: it is charged for itself alone.
SELF_DRAFT_SYNTHETIC = DRAFT_SIMPLE | {"n_max": 2, "spec_synth_len": 3.0}


def test_a_job_that_measures_its_baseline_is_charged_for_it(user, settings, db):
    config = BenchmarkConfig.model_validate(DRAFT_SIMPLE)
    synthetic = BenchmarkConfig.model_validate(SELF_DRAFT_SYNTHETIC)

    assert job_token_budget(config) == token_budget(config, with_baseline=True)
    assert job_token_budget(synthetic) == token_budget(synthetic)
    assert job_token_budget(config.baseline()) == token_budget(config.baseline())
    # Just enough for the config alone is not enough for the config and its baseline.
    settings.SPECBOARD_MAX_JOB_TOKENS = token_budget(config)["total_tokens"]
    with pytest.raises(services.LimitReached):
        check_allowance(user=user, config=config)
    check_allowance(user=user, config=synthetic)


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


def test_a_job_keeps_the_runners_token_budget_and_the_day_is_summed_from_it(
    api, user, models, hardware, enqueued, settings
):
    settings.SPECBOARD_DAILY_TOKENS = 1_000_000
    for n_predict in (100, 300):
        config = CONFIG | {"protocol": {"name": "quick", "n_predict": n_predict}}
        assert submit_by_api(api, hardware, config).status_code == 201
    jobs = list(Job.objects.filter(owner=user).select_related("config"))
    budgets = [job_token_budget(parse_stored_config(j.config.canonical)) for j in jobs]

    assert [j.total_tokens for j in jobs] == [b["total_tokens"] for b in budgets]
    assert len(set(j.total_tokens for j in jobs)) == 2  # the two configs cost differently
    left = selectors.allowance(user=user).daily_tokens_left
    assert left == 1_000_000 - sum(j.total_tokens for j in jobs)
    # Yesterday's jobs no longer count.
    Job.objects.filter(pk=jobs[0].pk).update(created_at=timezone.now() - timedelta(days=2))
    assert selectors.allowance(user=user).daily_tokens_left == 1_000_000 - jobs[1].total_tokens


def test_the_allowance_is_one_query_however_many_jobs_the_user_has(
    api, user, models, hardware, enqueued, settings, django_assert_num_queries
):
    settings.SPECBOARD_SUBMISSION_RATE = "1000/hour"
    for index in range(12):
        assert submit_by_api(api, hardware, CONFIG | {"threads": index + 1}).status_code == 201
    with django_assert_num_queries(1):
        left = selectors.allowance(user=user)
    assert left.submissions_left == 1000 - 12
