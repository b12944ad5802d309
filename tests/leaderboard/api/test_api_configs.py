"""GET /api/v1/configs and /configs/<key>: a config with its best run's energy and roofline,
the same in the list as in the detail."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard import services
from tests.support.api_clients import SPECULATIVE
from tests.support.protocol_results import categories_config
from tests.support.protocol_runs import CATEGORIES
from tests.support.stored_results import (
    BANDWIDTH,
    ROOFLINE,
    WEIGHTS,
    expected_roofline,
    on_gpu,
    store_summary,
)


def test_a_config_is_read_without_a_token(anonymous, models, hardware, user, enqueued):
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)

    detail = anonymous.get(f"/api/v1/configs/{job.config.key}").json()

    assert detail["spec_label"] == "draft-dflash"
    # Without a row it has no protocol figures, and no best run to take energy from.
    assert detail["concurrency_levels"] is None and detail["categories"] is None
    assert detail["energy"] is None and detail["roofline"] is None


def test_a_gpu_result_s_figures_are_shown_and_a_config_shows_its_best_run_s(anonymous, recorded):
    slower, faster = recorded
    store_summary(slower, joules_per_token=9.0, joules_per_accepted_token=None, roofline=None)
    # What it stored (the target-only form of older files, or anything) is not what is shown.
    on_gpu(faster, joules_per_token=0.25, joules_per_accepted_token=0.5, roofline=ROOFLINE)
    expected = expected_roofline(faster)
    summary = faster.raw_result["summary"]
    tau = summary["tau"] or 1.0  # these fake CPU records verified nothing: one token a step
    # The DFlash step: the target's weights and one pass of the draft, for tau tokens.
    assert expected["bytes_per_step"] == WEIGHTS + 1_000
    assert expected["tokens_per_step"] == pytest.approx(tau)
    assert expected["fraction"] == pytest.approx(
        summary["decode_tokens_per_second"]["mean"] * (WEIGHTS + 1_000) / (BANDWIDTH * tau)
    )
    assert expected["fraction"] != pytest.approx(ROOFLINE["fraction"])

    body = anonymous.get(f"/api/v1/runs/{faster.pk}").json()
    # There is no energy of an accepted draft token: the key stays, null.
    assert body["energy"] == {"joules_per_token": 0.25, "joules_per_accepted_token": None}
    assert body["roofline"]["fraction"] == pytest.approx(expected["fraction"])
    assert body["roofline"]["bytes_per_step"] == WEIGHTS + 1_000
    assert body["roofline"]["kv_bytes_per_step"] is None  # the tiny model's K/V size not given
    slow = anonymous.get(f"/api/v1/runs/{slower.pk}").json()
    assert slow["energy"] == {"joules_per_token": 9.0, "joules_per_accepted_token": None}
    assert slow["roofline"] is None

    key = faster.config.key
    detail = anonymous.get(f"/api/v1/configs/{key}").json()
    listed = {row["key"]: row for row in anonymous.get("/api/v1/configs").json()["results"]}
    for config in (detail, listed[key]):
        assert config["energy"] == {"joules_per_token": 0.25, "joules_per_accepted_token": None}
        assert config["roofline"]["flag"] is None
        assert config["roofline"]["bytes_per_token"] == round((WEIGHTS + 1_000) / tau)


def test_the_api_gives_a_config_its_categories_and_energy(client, category_runs):
    key = categories_config(CATEGORIES).key
    body = APIClient().get(f"/api/v1/configs/{key}").json()

    assert [c["category"] for c in body["categories"]] == CATEGORIES
    assert body["categories"][0]["speedup"] == pytest.approx(1.8)
    assert body["concurrency_levels"] is None and body["crossover_concurrency"] is None
    rows = APIClient().get("/api/v1/leaderboard", {"source": "all"}).json()["results"]
    (row,) = [r for r in rows if r["config_key"] == key]
    # 80 J a request over 32 generated tokens; no energy of an accepted draft token exists.
    assert row["joules_per_token"] == pytest.approx(80.0 / 32)
    assert row["joules_per_accepted_token"] is None
    assert row["roofline_fraction"] is None and row["roofline_flag"] is None
