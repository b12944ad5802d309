"""Definitions in the API: a leaderboard row carries each number's definition, its n and its
interval, as the board shows them one hover away (tests/leaderboard/views/test_board_page.py)."""

from __future__ import annotations

import pytest

from leaderboard.models import LeaderboardEntry
from leaderboard.services.board import mark_test_weights
from tests.support.measured_configs import measure


@pytest.fixture
def real_models(models):
    """The tiny fixtures cleared of their test-weights mark, so their rows are ranked."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


@pytest.fixture
def measured(user, real_models, hardware, enqueued, make_result):
    return measure(user, hardware, make_result, 4, [100.0, 104.0])


def test_the_api_row_carries_each_numbers_definition_n_and_interval(client, measured):
    entry = LeaderboardEntry.objects.get(config=measured.config)
    (row,) = [
        r
        for r in client.get("/api/v1/leaderboard").json()["results"]
        if r["config_key"] == entry.config.key
    ]

    assert set(row["definitions"]) == {
        "tokens_per_second", "ci95", "n", "speedup", "acceptance_rate", "tau", "runs_count",
        "joules_per_token", "roofline",
    }  # fmt: skip
    assert row["definitions"]["joules_per_token"].startswith("J/token: NVML's energy counter")
    assert row["definitions"]["roofline"].startswith("roofline: mean decode tok/s over the")
    assert row["definitions"]["acceptance_rate"].startswith("acceptance: draft tokens accepted")
    assert row["definitions"]["tau"].startswith("tau: 1 + accepted draft tokens per verify step")
    assert row["acceptance_draft_tokens"] == entry.best_run.draft_tokens
    assert row["acceptance_accepted_tokens"] == entry.best_run.draft_accepted
    assert row["tau_verify_steps"] == entry.best_run.verify_steps
    assert row["ci95_scope"] == "requests" and row["n"] == 2
    assert row["baseline_tokens_per_second"] == entry.baseline_entry.tokens_per_second
    assert row["depths"] == []
