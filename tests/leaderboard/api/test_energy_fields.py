"""The run and config resources' energy and roofline fields: what a GPU result stored, null on a
CPU result, and null (never an error) on whatever a stored result carries instead."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard import selectors, services
from leaderboard.models import Run

SPECULATIVE = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}
ROOFLINE = {
    "peak_bandwidth_bytes_per_second": 4_916_736_000_000,
    "bytes_per_token": 658_432,
    "ceiling_tokens_per_second": 4_916_736_000_000 / 658_432,
    "fraction": 0.001,
    "flag": None,
}


@pytest.fixture
def recorded(models, hardware, user, enqueued, make_result) -> list[Run]:
    """Two runs of one speculative config, as the runner's results of a CPU host record them."""
    runs = []
    for decode in ([100.0, 110.0], [150.0, 160.0]):
        job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
        runs.append(
            services.record_result(job_id=job.pk, result=make_result(job.config.key, decode))
        )
    return runs


def _store_summary(run: Run, **figures) -> None:
    raw = dict(run.raw_result)
    raw["summary"] = dict(raw["summary"]) | figures
    Run.objects.filter(pk=run.pk).update(raw_result=raw)


def test_a_cpu_result_shows_null_energy_and_roofline(recorded):
    api = APIClient()
    run = recorded[0]
    assert run.raw_result["summary"].get("roofline") is None
    body = api.get(f"/api/v1/runs/{run.pk}").json()
    assert body["energy"] is None and body["roofline"] is None
    listed = api.get("/api/v1/runs").json()["results"]
    assert {row["id"]: (row["energy"], row["roofline"]) for row in listed} == {
        r.pk: (None, None) for r in recorded
    }
    config = api.get(f"/api/v1/configs/{run.config.key}").json()
    assert config["energy"] is None and config["roofline"] is None


def test_a_gpu_result_s_figures_are_shown_and_a_config_shows_its_best_run_s(recorded):
    slower, faster = recorded
    _store_summary(slower, joules_per_token=9.0, joules_per_accepted_token=None, roofline=None)
    _store_summary(faster, joules_per_token=0.25, joules_per_accepted_token=0.5, roofline=ROOFLINE)
    api = APIClient()

    body = api.get(f"/api/v1/runs/{faster.pk}").json()
    assert body["energy"] == {"joules_per_token": 0.25, "joules_per_accepted_token": 0.5}
    assert body["roofline"] == pytest.approx(ROOFLINE)
    slow = api.get(f"/api/v1/runs/{slower.pk}").json()
    assert slow["energy"] == {"joules_per_token": 9.0, "joules_per_accepted_token": None}
    assert slow["roofline"] is None

    key = faster.config.key
    detail = api.get(f"/api/v1/configs/{key}").json()
    listed = {row["key"]: row for row in api.get("/api/v1/configs").json()["results"]}
    for config in (detail, listed[key]):
        assert config["energy"] == {"joules_per_token": 0.25, "joules_per_accepted_token": 0.5}
        assert config["roofline"]["flag"] is None
        assert config["roofline"]["bytes_per_token"] == 658_432


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
def test_hostile_stored_figures_are_null_never_an_error(recorded, summary):
    run = recorded[1]
    _store_summary(run, **summary)
    api = APIClient()
    body = api.get(f"/api/v1/runs/{run.pk}").json()
    assert body["energy"] is None and body["roofline"] is None
    config = api.get(f"/api/v1/configs/{run.config.key}").json()
    assert config["energy"] is None and config["roofline"] is None


@pytest.mark.parametrize("raw_result", [[], "text", 5, {"summary": "text"}, {"summary": None}])
def test_a_stored_result_of_the_wrong_shape_gives_null_fields(recorded, raw_result):
    run = recorded[1]
    Run.objects.filter(pk=run.pk).update(raw_result=raw_result)
    api = APIClient()
    body = api.get(f"/api/v1/runs/{run.pk}").json()
    assert body["energy"] is None and body["roofline"] is None
    config = api.get(f"/api/v1/configs/{run.config.key}").json()
    assert config["energy"] is None and config["roofline"] is None


def test_the_board_and_pages_read_stored_figures_as_stored(recorded):
    """A figure stored as a string is not a number on any database (SQLite parses a JSON key's
    string value when one key is read alone: the board reads the whole summary instead)."""
    run = recorded[0]
    _store_summary(run, joules_per_token="1.5", joules_per_accepted_token=0.25, roofline=ROOFLINE)

    figures = selectors.energy_by_run(run_ids=[run.pk])[run.pk]
    assert figures["joules_per_token"] is None
    assert figures["joules_per_accepted_token"] == 0.25
    assert figures["roofline_fraction"] == 0.001
    run.refresh_from_db()
    assert selectors.energy_figures(run.raw_result)["joules_per_token"] is None
