"""The categories protocol in the API: a config's categories (with their intervals) and energy, and
empty or unknown categories refused as a field error with no job queued. (The pages are in
tests/leaderboard/views/.)"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard.models import Job, Run
from tests.support.protocol_results import categories_config
from tests.support.protocol_runs import CATEGORIES, import_category_runs


@pytest.fixture
def category_runs(user, models, hardware, make_protocol_result) -> list[Run]:
    """A DFlash config's categories result with its paired baseline, imported as a result file."""
    return import_category_runs(user, hardware, make_protocol_result)


def test_the_api_gives_a_config_its_categories_and_energy(client, category_runs):
    key = categories_config(CATEGORIES).key
    body = APIClient().get(f"/api/v1/configs/{key}").json()

    assert [c["category"] for c in body["categories"]] == CATEGORIES
    assert body["categories"][0]["speedup"] == pytest.approx(1.8)
    assert body["concurrency_levels"] is None and body["crossover_concurrency"] is None
    rows = APIClient().get("/api/v1/leaderboard", {"source": "all"}).json()["results"]
    (row,) = [r for r in rows if r["config_key"] == key]
    # 8 J a request over 32 generated tokens; no energy of an accepted draft token exists.
    assert row["joules_per_token"] == pytest.approx(8.0 / 32)
    assert row["joules_per_accepted_token"] is None
    assert row["roofline_fraction"] is None and row["roofline_flag"] is None


def categories_submission(hardware, **protocol) -> dict:
    return {
        "hardware": hardware.slug,
        "config": {
            "target_model": "tiny-qwen3.gguf",
            "spec_types": ["ngram-mod"],
            "protocol": {"name": "categories", "output_tokens": 16} | protocol,
        },
    }


@pytest.mark.parametrize(
    ("categories", "fragment"), [([], "at least one category"), (["poetry"], "unknown category")]
)
def test_empty_or_unknown_categories_are_a_field_error_in_the_api(
    user, models, hardware, enqueued, categories, fragment
):
    api = APIClient()
    api.force_authenticate(user=user)
    response = api.post(
        "/api/v1/submissions",
        categories_submission(hardware, categories=categories),
        format="json",
    )

    assert response.status_code == 400
    errors = response.json()["config"]
    assert fragment in " ".join(errors["protocol.categories.categories"])
    assert not Job.objects.exists()
