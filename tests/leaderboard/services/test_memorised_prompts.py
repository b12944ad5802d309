"""A speedup measured on a repeated prompt by drafting that learns across requests is labelled:
the seed's n-gram 11.13x (acceptance rising from 0.81 to 0.91 over seven batches of one prompt)
is an upper bound, not what a new prompt gets."""

from __future__ import annotations

import html
import re

import pytest

from leaderboard import services
from leaderboard.models import LeaderboardEntry
from leaderboard.services.board import mark_test_weights
from tests.support.seed_kit import SEED_CSV


@pytest.fixture
def seed_board(db):
    return services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="NVIDIA RTX PRO 6000 Blackwell 96GB"
    )


def test_the_seed_kits_ngram_row_is_labelled_as_measured_on_a_repeated_prompt(seed_board, client):
    ngram = LeaderboardEntry.objects.get(config__label="qwen36-dflash-ngram")
    assert round(ngram.speedup, 2) == 11.13 and ngram.memorised
    # DFlash alone drafts from the target's hidden states, not from earlier output.
    assert not LeaderboardEntry.objects.get(config__label="qwen36-dflash15").memorised
    page = re.sub(r"\s+", " ", html.unescape(client.get("/", {"all": "1"}).content.decode()))
    row = page[page.index("qwen36-dflash-ngram") :]
    row = row[: row.index("</tr>")]
    assert "repeated prompt" in row


def test_a_workers_ngram_result_is_memorised_only_when_its_requests_share_a_prompt(
    user, hardware, models, make_result
):
    mark_test_weights(models=models.values(), test_weights=False)
    job = services.submit_config(
        owner=user,
        data={
            "target_model": "tiny-qwen3.gguf",
            "spec_types": ["ngram-simple"],
            "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
        },
        hardware_slug=hardware.slug,
    )
    result = make_result(job.config.key, [100.0, 101.0, 99.0])
    for record in result["requests"]:
        record["prompt_sha256"] = "a" * 64
    services.record_result(job_id=job.pk, result=result)
    assert LeaderboardEntry.objects.get(config=job.config).memorised

    other = services.submit_config(
        owner=user,
        data={
            "target_model": "tiny-qwen3.gguf",
            "spec_types": ["ngram-simple"],
            "protocol": {"name": "quick", "n_predict": 64, "runs": 3, "seed": 7},
        },
        hardware_slug=hardware.slug,
    )
    distinct = make_result(other.config.key, [100.0, 101.0, 99.0])
    for index, record in enumerate(distinct["requests"]):
        record["prompt_sha256"] = f"{index:064x}"
    services.record_result(job_id=other.pk, result=distinct)
    assert not LeaderboardEntry.objects.get(config=other.config).memorised
