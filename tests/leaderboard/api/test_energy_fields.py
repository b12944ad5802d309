"""The run and config resources' energy and roofline fields: a GPU result's energy as stored and
its roofline derived from its own evidence (never the stored figure), null on a CPU result, and
null (never an error) on whatever a stored result carries instead."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard import selectors, services
from leaderboard.models import Run
from runner import roofline

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


BANDWIDTH = 4_916_736_000_000
WEIGHTS = 658_432


def _on_gpu(run: Run, *, kv_elements: int | None = None, **figures) -> None:
    """The stored result as a CUDA host's: its engine, its GPU's bandwidth, its target's weight
    bytes and K/V size (unknown unless given) and its draft's, with the summary figures given."""
    raw = dict(run.raw_result)
    raw["engine"] = dict(raw["engine"]) | {"backend": "cuda"}
    provenance = dict(raw["provenance"])
    provenance["system"] = dict(provenance["system"]) | {
        "gpu_peak_bandwidth_bytes_per_second": BANDWIDTH
    }
    target = dict(provenance["models"]["target"]) | {
        "weight_bytes_per_token": WEIGHTS,
        "kv_elements_per_token": kv_elements,
    }
    draft = provenance["models"]["draft"]
    draft = (
        dict(draft) | {"weight_bytes_per_token": 1_000, "kv_elements_per_token": None}
        if draft
        else None
    )
    provenance["models"] = {"target": target, "draft": draft}
    raw["provenance"] = provenance
    raw["summary"] = dict(raw["summary"]) | figures
    Run.objects.filter(pk=run.pk).update(raw_result=raw)


def _expected_roofline(run: Run) -> dict:
    run.refresh_from_db()
    return roofline.derived_roofline(run.raw_result, run=run.raw_result)


def test_a_gpu_result_s_figures_are_shown_and_a_config_shows_its_best_run_s(recorded):
    slower, faster = recorded
    _store_summary(slower, joules_per_token=9.0, joules_per_accepted_token=None, roofline=None)
    # What it stored (the target-only form of older files, or anything) is not what is shown.
    _on_gpu(faster, joules_per_token=0.25, joules_per_accepted_token=0.5, roofline=ROOFLINE)
    expected = _expected_roofline(faster)
    summary = faster.raw_result["summary"]
    tau = summary["tau"] or 1.0  # these fake CPU records verified nothing: one token a step
    # The DFlash step: the target's weights and one pass of the draft, for tau tokens.
    assert expected["bytes_per_step"] == WEIGHTS + 1_000
    assert expected["tokens_per_step"] == pytest.approx(tau)
    assert expected["fraction"] == pytest.approx(
        summary["decode_tokens_per_second"]["mean"] * (WEIGHTS + 1_000) / (BANDWIDTH * tau)
    )
    assert expected["fraction"] != pytest.approx(ROOFLINE["fraction"])
    api = APIClient()

    body = api.get(f"/api/v1/runs/{faster.pk}").json()
    # There is no energy of an accepted draft token: the key stays, null.
    assert body["energy"] == {"joules_per_token": 0.25, "joules_per_accepted_token": None}
    assert body["roofline"]["fraction"] == pytest.approx(expected["fraction"])
    assert body["roofline"]["bytes_per_step"] == WEIGHTS + 1_000
    assert body["roofline"]["kv_bytes_per_step"] is None  # the tiny model's K/V size not given
    slow = api.get(f"/api/v1/runs/{slower.pk}").json()
    assert slow["energy"] == {"joules_per_token": 9.0, "joules_per_accepted_token": None}
    assert slow["roofline"] is None

    key = faster.config.key
    detail = api.get(f"/api/v1/configs/{key}").json()
    listed = {row["key"]: row for row in api.get("/api/v1/configs").json()["results"]}
    for config in (detail, listed[key]):
        assert config["energy"] == {"joules_per_token": 0.25, "joules_per_accepted_token": None}
        assert config["roofline"]["flag"] is None
        assert config["roofline"]["bytes_per_token"] == round((WEIGHTS + 1_000) / tau)


def test_the_roofline_counts_the_kv_cache_where_the_target_s_metadata_gives_it(recorded):
    run = recorded[1]
    _on_gpu(run, kv_elements=73_728, joules_per_token=0.25)
    expected = _expected_roofline(run)
    records = [r for r in run.raw_result["requests"] if r["phase"] == "measure"]
    context = sum(r["predicted_n"] * (r["prompt_n"] + r["predicted_n"] / 2) for r in records)
    context /= sum(r["predicted_n"] for r in records)
    assert expected["kv_bytes_per_step"] == round(73_728 * 2 * context)
    body = APIClient().get(f"/api/v1/runs/{run.pk}").json()
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
    string value when one key is read alone: the board reads the whole result instead)."""
    run = recorded[0]
    _on_gpu(run, joules_per_token="1.5", joules_per_accepted_token=0.25, roofline=ROOFLINE)
    expected = _expected_roofline(run)

    figures = selectors.energy_by_run(run_ids=[run.pk])[run.pk]
    assert figures["joules_per_token"] is None
    assert "joules_per_accepted_token" not in figures
    assert figures["roofline_fraction"] == pytest.approx(expected["fraction"])
    run.refresh_from_db()
    page = selectors.energy_figures(run.raw_result)
    assert page["joules_per_token"] is None and "joules_per_accepted_token" not in page
    assert "prefill and any idle time" in page["definitions"]["joules_per_token"]
    assert "bytes one step reads" in page["definitions"]["roofline"]


def test_a_cpu_result_s_stored_roofline_is_not_shown(recorded):
    run = recorded[0]
    _store_summary(run, roofline=ROOFLINE)
    assert selectors.energy_by_run(run_ids=[run.pk])[run.pk]["roofline_fraction"] is None
    assert APIClient().get(f"/api/v1/runs/{run.pk}").json()["roofline"] is None
