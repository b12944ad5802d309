"""The concurrency protocol's results off the pages: its rows rank only among concurrency rows (by
aggregate tok/s at the lowest level, their rounds the samples); the API gives the levels,
speedups and crossover the pages show; submitting it through the API queues it or refuses bad
levels as a field error. (The pages are in tests/leaderboard/views/.)"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard import selectors
from leaderboard.models import Job, LeaderboardEntry, Run
from leaderboard.services.board import mark_test_weights
from tests.support.measured_configs import measure
from tests.support.protocol_runs import (
    CONCURRENCY_SPECULATIVE,
    CONCURRENCY_SPEEDUPS,
    LEVELS,
    concurrency_key,
    import_concurrency_runs,
)


@pytest.fixture
def models(models):
    """Cleared of the test-weights mark, as an admin could: the ranking test needs ranked rows."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


@pytest.fixture
def concurrency_runs(user, models, hardware, make_protocol_result) -> list[Run]:
    """A DFlash config's concurrency result with its paired baseline, imported as a result file."""
    return import_concurrency_runs(user, hardware, make_protocol_result)


def test_a_concurrency_row_ranks_only_among_concurrency_rows(
    concurrency_runs, user, hardware, enqueued, make_result
):
    # A quick row far faster than the concurrency row's pooled decode tok/s.
    measure(user, hardware, make_result, 4, [900.0, 910.0])
    entries = selectors.leaderboard_entries(ranked_only=True)
    page = list(entries)
    ranks = selectors.page_ranks(entries, page, offset=0, ordering="tokens_per_second")
    by_protocol = {}
    for entry in page:
        by_protocol.setdefault(entry.config.protocol, []).append(ranks[entry.pk].rank)
    # Each protocol family's fastest row is rank 1 of its own ranking.
    assert min(by_protocol["concurrency"]) == 1 and min(by_protocol["quick"]) == 1
    speculative = LeaderboardEntry.objects.get(config__key=concurrency_key())
    # The row ranks by aggregate tok/s at its lowest level (its rounds the samples), not by
    # per-request decode pooled over levels, and its speedup is that level's ratio.
    assert speculative.tps_definition == "aggregate" and speculative.interval_basis == "rounds"
    assert speculative.tokens_per_second == pytest.approx(CONCURRENCY_SPECULATIVE[0], rel=1e-3)
    assert speculative.speedup == pytest.approx(CONCURRENCY_SPEEDUPS[0], rel=1e-3)
    assert speculative.speedup_basis == "rounds" and speculative.crossover == "between 2 and 4"
    assert speculative.ranking_key != next(
        e.ranking_key for e in page if e.config.protocol == "quick"
    )
    definitions = selectors.row_definitions(speculative, {})
    assert "at its lowest level" in definitions["tokens_per_second"]
    assert "aggregate tok/s over the paired" in definitions["speedup"]


def test_the_api_gives_the_same_levels_speedups_and_crossover(client, concurrency_runs):
    body = client.get("/api/v1/concurrency").json()

    assert body["target"] == "tiny-qwen3" and body["levels"] == LEVELS
    (line,) = [line for line in body["lines"] if not line["baseline"]]
    assert line["config_key"] == concurrency_key() and line["crossover"] == 4
    assert [row["speedup"] for row in line["rows"]] == pytest.approx(CONCURRENCY_SPEEDUPS, rel=1e-3)
    assert line["rows"][0]["n"] == 2 and line["rows"][0]["ci95_low"] is not None
    config = client.get(f"/api/v1/configs/{concurrency_key()}").json()
    assert config["crossover_concurrency"] == 4
    assert [row["concurrency"] for row in config["concurrency_levels"]] == LEVELS
    assert config["categories"] is None
    # The existing fields stay.
    assert config["key"] == concurrency_key() and config["protocol"] == "concurrency"


@pytest.fixture
def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=user)
    return client


def concurrency_submission(hardware, **protocol) -> dict:
    return {
        "hardware": hardware.slug,
        "config": {
            "target_model": "tiny-qwen3.gguf",
            "draft_model": "tiny-dflash.gguf",
            "spec_types": ["draft-dflash"],
            "n_max": 4,
            "protocol": {"name": "concurrency", "input_tokens": 64, "output_tokens": 32} | protocol,
        },
    }


def test_the_api_queues_a_concurrency_config(api, models, hardware, enqueued):
    response = api.post(
        "/api/v1/submissions", concurrency_submission(hardware, levels=[1, 2]), format="json"
    )

    assert response.status_code == 201, response.json()
    job = Job.objects.get(pk=response.json()["id"])
    assert job.config.protocol == "concurrency"
    assert job.config.canonical["protocol"]["levels"] == [1, 2]


@pytest.mark.parametrize(
    ("levels", "fragment"),
    [([1, 128], "slot limit"), ([4, 2], "strictly increasing"), ([], "at least one")],
)
def test_bad_levels_are_a_field_error_in_the_api_and_queue_nothing(
    api, models, hardware, enqueued, levels, fragment
):
    response = api.post(
        "/api/v1/submissions", concurrency_submission(hardware, levels=levels), format="json"
    )

    assert response.status_code == 400
    errors = response.json()["config"]
    (field,) = [name for name in errors if name.startswith("protocol.")]
    assert field.endswith(".levels") and fragment in " ".join(errors[field])
    assert not Job.objects.exists()
