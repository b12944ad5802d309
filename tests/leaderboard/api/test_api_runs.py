"""GET /api/v1/runs, /runs/<id> and a run's request exports: a run with its per-request records,
its energy as stored and its roofline derived from its own evidence (never the stored figure),
null on a CPU result and null (never an error) on whatever a stored result carries instead."""

from __future__ import annotations

import csv
import io

import pytest

from leaderboard import selectors, services
from leaderboard.models import Run
from tests.support.api_clients import SPECULATIVE
from tests.support.stored_results import (
    BANDWIDTH,
    ROOFLINE,
    expected_roofline,
    on_gpu,
    store_summary,
)


def test_a_run_and_the_runs_of_a_config_are_read_without_a_token(
    anonymous, models, hardware, user, enqueued, make_result
):
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    run = services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0, 120.0]))

    detail = anonymous.get(f"/api/v1/runs/{run.pk}").json()
    assert len(detail["requests"]) == 2 and detail["decode_mean"] == pytest.approx(110.0)
    assert anonymous.get("/api/v1/runs", {"config": job.config.key}).json()["count"] == 1


def test_run_requests_export_as_csv_and_json(
    anonymous, models, hardware, user, enqueued, make_result
):
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    run = services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0, 120.0]))

    table = list(
        csv.DictReader(
            io.StringIO(
                anonymous.get(f"/api/v1/exports/runs/{run.pk}/requests.csv").content.decode()
            )
        )
    )
    rows = anonymous.get(f"/api/v1/exports/runs/{run.pk}/requests.json").json()

    assert [float(r["decode_tokens_per_second"]) for r in table] == [100.0, 120.0]
    assert [r["decode_tokens_per_second"] for r in rows] == [100.0, 120.0]
    assert anonymous.get("/api/v1/exports/runs/999999/requests.csv").status_code == 404


def test_a_cpu_result_shows_null_energy_and_roofline(anonymous, recorded):
    run = recorded[0]
    assert run.raw_result["summary"].get("roofline") is None
    body = anonymous.get(f"/api/v1/runs/{run.pk}").json()
    assert body["energy"] is None and body["roofline"] is None
    listed = anonymous.get("/api/v1/runs").json()["results"]
    assert {row["id"]: (row["energy"], row["roofline"]) for row in listed} == {
        r.pk: (None, None) for r in recorded
    }
    config = anonymous.get(f"/api/v1/configs/{run.config.key}").json()
    assert config["energy"] is None and config["roofline"] is None


def test_the_roofline_counts_the_kv_cache_where_the_target_s_metadata_gives_it(anonymous, recorded):
    run = recorded[1]
    on_gpu(run, kv_elements=73_728, joules_per_token=0.25)
    expected = expected_roofline(run)
    records = [r for r in run.raw_result["requests"] if r["phase"] == "measure"]
    context = sum(r["predicted_n"] * (r["prompt_n"] + r["predicted_n"] / 2) for r in records)
    context /= sum(r["predicted_n"] for r in records)
    assert expected["kv_bytes_per_step"] == round(73_728 * 2 * context)
    body = anonymous.get(f"/api/v1/runs/{run.pk}").json()
    assert body["roofline"]["kv_bytes_per_step"] == expected["kv_bytes_per_step"]
    assert body["roofline"]["ceiling_tokens_per_second"] == pytest.approx(
        BANDWIDTH * expected["tokens_per_step"] / expected["bytes_per_step"]
    )


@pytest.mark.parametrize(
    "summary",
    [
        {"joules_per_token": "1.5", "joules_per_accepted_token": True, "roofline": "fast"},
        {"joules_per_token": -1.0, "joules_per_accepted_token": [], "roofline": []},
        {"joules_per_token": None, "roofline": ROOFLINE | {"flag": "<script>"}},
        {"roofline": ROOFLINE | {"fraction": -0.5}},
        {"roofline": ROOFLINE | {"bytes_per_token": 0}},
        {"roofline": ROOFLINE | {"extra": 1}},
        {"roofline": {k: v for k, v in ROOFLINE.items() if k != "fraction"}},
        {"roofline": ROOFLINE | {"ceiling_tokens_per_second": "1e400"}},
    ],
)
def test_hostile_stored_figures_are_null_never_an_error(anonymous, recorded, summary):
    run = recorded[1]
    store_summary(run, **summary)
    body = anonymous.get(f"/api/v1/runs/{run.pk}").json()
    assert body["energy"] is None and body["roofline"] is None
    config = anonymous.get(f"/api/v1/configs/{run.config.key}").json()
    assert config["energy"] is None and config["roofline"] is None


@pytest.mark.parametrize("raw_result", [[], "text", 5, {"summary": "text"}, {"summary": None}])
def test_a_stored_result_of_the_wrong_shape_gives_null_fields(anonymous, recorded, raw_result):
    run = recorded[1]
    Run.objects.filter(pk=run.pk).update(raw_result=raw_result)
    body = anonymous.get(f"/api/v1/runs/{run.pk}").json()
    assert body["energy"] is None and body["roofline"] is None
    config = anonymous.get(f"/api/v1/configs/{run.config.key}").json()
    assert config["energy"] is None and config["roofline"] is None


def test_a_cpu_result_s_stored_roofline_is_not_shown(anonymous, recorded):
    run = recorded[0]
    store_summary(run, roofline=ROOFLINE)
    assert selectors.energy_by_run(run_ids=[run.pk])[run.pk]["roofline_fraction"] is None
    assert anonymous.get(f"/api/v1/runs/{run.pk}").json()["roofline"] is None
