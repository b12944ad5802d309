"""The concurrency and categories protocols as a user meets them after a real run: the board's
row speedup agrees with the runner's definition (a categories row's is the geometric mean of the
per-category speedups, as the run page and the runner's summary say), and an imported file's
provenance does not claim a measuring pipeline it did not come from."""

from __future__ import annotations

import html
import io
import json
import math
import re

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.models import LeaderboardEntry, Run
from runner.evidence import derived_speedup
from tests.support.protocol_results import (
    categories_config,
    category_records,
    concurrency_config,
    concurrency_records,
)

CATEGORIES = ["code", "math", "translation"]
DECODE = {"code": 180.0, "math": 120.0, "translation": 90.0}
BASELINE = {"code": 100.0, "math": 100.0, "translation": 100.0}
ACCEPTANCE = {"code": 0.9, "math": 0.6, "translation": 0.2}


@pytest.fixture
def categories_result(make_protocol_result) -> dict:
    config = categories_config(CATEGORIES)
    return make_protocol_result(
        config,
        category_records(config, DECODE, ACCEPTANCE),
        category_records(config.baseline(), BASELINE, None),
    )


def test_a_categories_row_speedup_is_the_geometric_mean_of_its_categories(
    user, models, hardware, categories_result
):
    services.import_runner_result(
        owner=user, hardware=hardware, result=categories_result, source="test"
    )
    key = categories_config(CATEGORIES).key
    row = LeaderboardEntry.objects.get(config__key=key)
    per_category = [DECODE[name] / BASELINE[name] for name in CATEGORIES]
    geometric = math.exp(sum(math.log(s) for s in per_category) / len(per_category))
    pooled = sum(DECODE.values()) / sum(BASELINE.values())
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


def test_a_config_that_never_paid_does_not_read_as_crossing_over(
    client, user, models, hardware, make_protocol_result
):
    config = concurrency_config([1, 2, 4])
    result = make_protocol_result(
        config,
        concurrency_records(config, [60.0, 80.0, 100.0], acceptance=0.75),
        concurrency_records(config.baseline(), [100.0, 160.0, 300.0], acceptance=None),
    )
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    page = re.sub(
        r"\s+", " ", html.unescape(client.get(f"/configs/{config.key}/").content.decode())
    )
    assert "Speculation did not pay at any level measured" in page
    assert "Crossover at 1 concurrent requests" not in page


def test_a_self_drafted_config_names_its_missing_model_once(
    client, user, hardware, make_protocol_result
):
    config = categories_config(
        CATEGORIES, draft_model="tiny-mtp.gguf", target_model="tiny-mtp.gguf"
    )
    result = make_protocol_result(
        config,
        category_records(config, DECODE, ACCEPTANCE),
        category_records(config.baseline(), BASELINE, None),
    )
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    page = re.sub(
        r"\s+", " ", html.unescape(client.get(f"/configs/{config.key}/").content.decode())
    )
    assert "It cannot be run here: tiny-mtp.gguf is not a registered model" in page


def test_a_category_with_nothing_drafted_reads_as_measured_not_missing(
    client, user, models, hardware, make_protocol_result
):
    config = categories_config(CATEGORIES)
    records = category_records(config, DECODE, ACCEPTANCE)
    for record in records:
        if record["category"] == "math":  # the n-gram type found nothing to draft from
            record.update(draft_n=0, draft_n_accepted=0, verify_steps=0, tau=None)
    result = make_protocol_result(
        config, records, category_records(config.baseline(), BASELINE, None)
    )
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    page = html.unescape(client.get("/categories/", {"target": "tiny-qwen3"}).content.decode())
    assert "math: acceptance none (nothing drafted), speedup 1.20×" in page
    assert '"–": nothing drafted in that category' in page
