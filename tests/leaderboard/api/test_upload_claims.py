"""Uploads through the API: claims a file cannot back are refused or not stored, and the API's
leaderboard lists the page's main ranking unless a query asks for more (POST /api/v1/uploads,
GET /api/v1/leaderboard)."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import LeaderboardEntry, Run
from runner.config import BenchmarkConfig
from tests.support.baselines import with_baseline_section

SPECULATIVE = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}
SYNTHETIC = SPECULATIVE | {"spec_synth_len": 6}


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


@pytest.fixture
def client(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {issue_api_token(user=user, name='tests').key}")
    return api


def upload(api: APIClient, result: dict, hardware: str = "RTX 4090"):
    body = {
        "file": SimpleUploadedFile("result.json", json.dumps(result).encode()),
        "hardware": hardware,
    }
    return api.post("/api/v1/uploads", body, format="multipart")


def honest_result(make_result, decode: list[float]) -> dict:
    return make_result(BenchmarkConfig.model_validate(SPECULATIVE), decode)


def test_a_file_claiming_lossless_and_5000_tok_s_over_requests_averaging_395_is_400(
    client, anonymous, make_result
):
    result = honest_result(make_result, [385.0, 395.0, 405.0])
    summary = result["summary"]
    summary["lossless"] = True
    summary["decode_tokens_per_second"]["mean"] = 5000.0

    response = upload(client, result)

    assert response.status_code == 400
    [message] = response.json()["file"]["non_field_errors"]
    assert message == (
        "summary.decode_tokens_per_second.mean is 5000, but the section's measured requests give 395"
    )
    assert not Run.objects.exists()
    assert anonymous.get("/api/v1/leaderboard", {"source": "all"}).json()["count"] == 0


def test_a_file_with_an_honest_summary_claiming_lossless_is_stored_as_unknown(
    client, anonymous, make_result
):
    result = honest_result(make_result, [385.0, 395.0, 405.0])
    # A speedup with no baseline section to derive it from is a claim nothing backs: refused.
    claimed = result | {"summary": result["summary"] | {"lossless": True, "speedup": 7.5}}
    refused = upload(client, claimed)
    assert refused.status_code == 400 and "summary.speedup" in str(refused.json())
    assert not Run.objects.exists()
    result["summary"] |= {"lossless": True}

    response = upload(client, result)

    assert response.status_code == 201, response.json()
    [shown] = response.json()["runs"]
    assert shown["lossless"] is None and shown["speedup"] is None
    assert Run.objects.get(pk=shown["id"]).lossless is None
    detail = anonymous.get(f"/api/v1/runs/{shown['id']}").json()
    assert detail["lossless"] is None and detail["decode_mean"] == pytest.approx(395.0)
    [row] = anonymous.get("/api/v1/leaderboard", {"source": "self-reported"}).json()["results"]
    assert row["lossless"] is None and row["self_reported"] is True


def test_a_file_without_a_measured_request_is_400(client, make_result):
    result = honest_result(make_result, [385.0, 395.0])
    for record in result["requests"]:
        record["phase"] = "warmup"

    response = upload(client, result)

    assert response.status_code == 400
    [message] = response.json()["file"]["non_field_errors"]
    assert "at least one measured request" in message
    assert not Run.objects.exists()


def ranked_labels(page: str) -> list[str]:
    ranking = re.search(r'<table class="board" id="ranking">(.*?)</table>', page, re.S)
    return (
        re.findall(r'<a href="/configs/[0-9a-f]+/">([^<]+)</a>', ranking.group(1))
        if ranking
        else []
    )


def api_labels(api: APIClient, query: dict | None = None) -> list[str]:
    return [row["label"] for row in api.get("/api/v1/leaderboard", query or {}).json()["results"]]


def test_the_api_leaderboard_defaults_to_the_pages_main_ranking(
    user, client, anonymous, models, hardware, enqueued, make_result
):
    for data, decode in ((SPECULATIVE, [200.0, 204.0]), (SYNTHETIC, [900.0, 904.0])):
        job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
        result = make_result(job.config.key, decode)
        if not job.config.synthetic:
            # It measures its paired baseline beside itself; the synthetic job pairs with that.
            baseline = make_result(job.config.baseline.key, [50.0, 52.0])
            result = with_baseline_section(result, baseline)
        services.record_result(job_id=job.pk, result=result)
    assert upload(client, honest_result(make_result, [385.0, 395.0])).status_code == 201
    synthetic = LeaderboardEntry.objects.get(synthetic=True).config.label
    uploaded = LeaderboardEntry.objects.get(self_reported=True).config.label

    default = api_labels(anonymous)
    page = ranked_labels(Client().get("/").content.decode())

    assert default == page
    assert synthetic not in default and uploaded not in default
    widened = api_labels(anonymous, {"source": "all"})
    assert synthetic in widened and uploaded in widened and set(default) < set(widened)
    assert set(widened) == set(ranked_labels(Client().get("/", {"all": "1"}).content.decode()))
    assert api_labels(anonymous, {"source": "self-reported"}) == [uploaded]
    assert synthetic in api_labels(anonymous, {"source": "measured"})
    # The downloads take the same query, so they default to the ranking too.
    exported = anonymous.get("/api/v1/exports/leaderboard.json").json()
    assert [row["label"] for row in exported] == default
