"""The H200's concurrency result (docs/gpu-results/h200-run4) on the site: imported through the
services like any runner file, its levels, crossover, energy and roofline shown as measured."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from leaderboard.models import Hardware, LeaderboardEntry
from tests.support.h200_results import CONCURRENCY_FILE, RESULTS_DIR, load_h200_results

LEVELS = [1, 2, 4, 8, 16]


@pytest.fixture
def imported(user, db):
    hardware = Hardware.objects.create(slug="h200", gpu_name="NVIDIA H200", queue_name="gpu.h200")
    runs = load_h200_results(owner=user, hardware=hardware, files=(CONCURRENCY_FILE,))
    return hardware, runs


def test_the_h200_concurrency_file_is_stored_with_its_baseline(imported):
    _, (baseline, speculative) = imported
    result = json.loads((RESULTS_DIR / CONCURRENCY_FILE).read_text())

    assert [p["concurrency"] for p in speculative.raw_result["points"]] == LEVELS
    assert speculative.synthetic and speculative.lossless is None and speculative.fidelity == ""
    assert result["summary"]["crossover_concurrency"] == 4
    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert entry.baseline_run == baseline


def test_the_concurrency_page_and_api_show_the_measured_crossover(imported, client: Client):
    hardware, (_, speculative) = imported
    target = speculative.config.target_name
    page = client.get("/concurrency/", {"target": target, "hardware": hardware.slug})
    assert page.status_code == 200
    text = page.content.decode()
    # The runner's point estimate is 4, but its three rounds there cannot tell (Welch p = 0.38).
    assert "between 2 and 8" in text

    api = client.get("/api/v1/concurrency", {"target": target, "hardware": hardware.slug}).json()
    line = next(line for line in api["lines"] if not line["baseline"])
    assert line["crossover"] == 4 and line["crossover_text"] == "between 2 and 8"
    assert [row["verdict"] for row in line["rows"]][2] == "not established"
    assert [row["concurrency"] for row in line["rows"]] == LEVELS
    speedups = [row["speedup"] for row in line["rows"]]
    assert speedups[0] == pytest.approx(1.661, abs=1e-3) and speedups[-1] < 1


def test_the_run_resource_carries_the_measured_energy_and_roofline(imported, client: Client):
    _, (baseline, speculative) = imported
    run = client.get(f"/api/v1/runs/{speculative.pk}").json()
    assert run["energy"]["joules_per_token"] == pytest.approx(0.4385, abs=1e-4)
    assert run["energy"]["joules_per_accepted_token"] is None  # stored 0.52, never shown
    # The file stored the target-only ceiling (1026 tok/s, 0.115 of it); what is shown is
    # derived from its evidence: level 1's aggregate against the target's and DFlash's bytes
    # for tau tokens, and every level against one batched step for all its requests.
    roofline = run["roofline"]
    assert roofline["ceiling_tokens_per_second"] == pytest.approx(5157.6, abs=0.1)
    assert roofline["fraction"] == pytest.approx(0.0617, abs=5e-5)
    assert roofline["rate"] == "aggregate" and roofline["bytes_per_step"] == 5_805_546_752
    assert [level["streams"] for level in roofline["levels"]] == LEVELS
    assert roofline["levels"][-1]["ceiling_tokens_per_second"] == pytest.approx(16 * 5157.6, 1e-4)
    base = client.get(f"/api/v1/runs/{baseline.pk}").json()["roofline"]
    assert base["levels"][0]["fraction"] == pytest.approx(0.1867, abs=5e-5)
    page = client.get(f"/configs/{speculative.config.key}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert '<dd id="roofline-fraction">6.2%' in text and "1: 6.2% of 5,158 tok/s" in text
    assert "an allocation" in text and "Joules per accepted" not in text
    assert client.get(f"/runs/{baseline.pk}/").status_code == 200


def test_the_run_page_names_each_requests_concurrency_level(imported, client: Client):
    _, (_, speculative) = imported
    page = client.get(f"/runs/{speculative.pk}/").content.decode()
    for level in LEVELS:
        assert f'<td class="num">{level} concurrent</td>' in page


def test_the_run_page_shows_point_indices_when_the_stored_points_say_nothing(
    imported, client: Client
):
    from leaderboard.models import Run

    _, (_, speculative) = imported
    Run.objects.filter(pk=speculative.pk).update(
        raw_result={"points": [1, {"concurrency": True}, {"category": 5}, None, "x"]}
    )
    page = client.get(f"/runs/{speculative.pk}/")
    assert page.status_code == 200
    assert "concurrent</td>" not in page.content.decode()
