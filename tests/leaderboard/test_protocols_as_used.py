"""The concurrency and categories protocols as a user meets them after a real run: the board's
row speedup agrees with the runner's definition (a categories row's is the geometric mean of the
per-category speedups, as the API's definition says), and an imported file's provenance does
not claim a measuring pipeline it did not come from. (What their pages say is in
tests/leaderboard/views/.)"""

from __future__ import annotations

import io
import json
import math

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.models import LeaderboardEntry, Run
from runner.evidence import derived_speedup
from tests.support.protocol_results import categories_config, category_records
from tests.support.protocol_runs import (
    CATEGORIES,
    CATEGORY_ACCEPTANCE,
    CATEGORY_BASELINE,
    CATEGORY_DECODE,
)


@pytest.fixture
def categories_result(make_protocol_result) -> dict:
    config = categories_config(CATEGORIES)
    return make_protocol_result(
        config,
        category_records(config, CATEGORY_DECODE, CATEGORY_ACCEPTANCE),
        category_records(config.baseline(), CATEGORY_BASELINE, None),
    )


def test_a_categories_row_speedup_is_the_geometric_mean_of_its_categories(
    user, models, hardware, categories_result
):
    services.import_runner_result(
        owner=user, hardware=hardware, result=categories_result, source="test"
    )
    key = categories_config(CATEGORIES).key
    row = LeaderboardEntry.objects.get(config__key=key)
    per_category = [CATEGORY_DECODE[name] / CATEGORY_BASELINE[name] for name in CATEGORIES]
    geometric = math.exp(sum(math.log(s) for s in per_category) / len(per_category))
    pooled = sum(CATEGORY_DECODE.values()) / sum(CATEGORY_BASELINE.values())
    assert abs(geometric - pooled) > 0.03  # the two definitions differ on these figures
    assert row.speedup == pytest.approx(geometric, rel=1e-6)
    # The runner's own definition, recomputed from the file's request records.
    assert derived_speedup(categories_result) == pytest.approx(row.speedup, rel=1e-6)


def test_an_imported_file_is_not_said_to_come_from_the_gpu_pipeline(
    user, models, hardware, categories_result, tmp_path
):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(categories_result))
    call_command(
        "import_runner_results",
        str(path),
        "--hardware",
        "CPU test",
        "--user",
        user.username,
        stdout=io.StringIO(),
    )
    run = Run.objects.get(config__key=categories_config(CATEGORIES).key)
    stored = json.dumps(run.raw_result.get("provenance")) + json.dumps(
        {f.name: str(getattr(run, f.name)) for f in Run._meta.fields}
    )
    assert "h200_pipeline" not in stored
    assert "import_runner_results" in stored


def test_a_categories_row_says_its_speedup_is_across_categories(
    user, models, hardware, categories_result
):
    services.import_runner_result(
        owner=user, hardware=hardware, result=categories_result, source="test"
    )
    response = APIClient().get("/api/v1/leaderboard", {"protocol": "categories", "source": "all"})
    assert response.status_code == 200
    (row,) = [r for r in response.json()["results"] if r["speedup"] is not None]
    sentence = row["definitions"]["speedup"]
    assert "geometric mean" in sentence and "categor" in sentence
    # The pooled tok/s of the two rows is not what this speedup divides.
    assert " over 100.00 tok/s" not in sentence
