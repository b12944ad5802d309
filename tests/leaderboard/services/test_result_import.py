"""Importing runner result files measured outside the queue (the H200 pipeline's output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from leaderboard import services
from leaderboard.models import LeaderboardEntry, Run
from runner.evidence import in_current_convention
from tests.support.h200_results import (
    CONCURRENCY_FILE,
    CONCURRENCY_LEVELS,
    RESULTS_DIR,
    load_h200_concurrency,
)

H200 = Path(__file__).resolve().parents[3] / "docs/gpu-results/h200-run2"


@pytest.fixture
def h200(db):
    return services.register_hardware(gpu_name="NVIDIA H200", memory_bytes=141 * 2**30)


@pytest.fixture
def owner(db):
    return get_user_model().objects.create(username="maintainer")


def test_a_paired_result_imports_as_its_baseline_and_its_speculative_run(h200, owner):
    result = json.loads((H200 / "8b-dflash15-depth.json").read_text())
    runs = services.import_runner_result(owner=owner, hardware=h200, result=result, source="test")
    baseline, dflash = runs
    assert baseline.config.spec_label == "none" and dflash.config.spec_label == "draft-dflash"
    assert dflash.synthetic and not baseline.synthetic
    # Decode derived from the file's timings in the current convention (runner.stats.decode_rate).
    assert dflash.decode_mean == pytest.approx(
        in_current_convention(result)["summary"]["decode_tokens_per_second"]["mean"]
    )
    assert dflash.provenance["source"] == "test"
    entry = LeaderboardEntry.objects.get(config=dflash.config, hardware=h200)
    assert entry.synthetic
    # One speedup definition, board and runner alike: over depths, the geometric mean of the
    # per-depth speedups (2.16 here), not the ratio of means pooled across depths (2.14).
    assert entry.speedup == pytest.approx(result["summary"]["speedup"])
    assert entry.speedup != pytest.approx(dflash.decode_mean / baseline.decode_mean, rel=1e-3)


def test_importing_the_same_file_twice_adds_nothing(h200, owner):
    result = json.loads((H200 / "8b-nmax12.json").read_text())
    services.import_runner_result(owner=owner, hardware=h200, result=result, source="test")
    services.import_runner_result(owner=owner, hardware=h200, result=result, source="test")
    assert Run.objects.count() == 1


def test_a_file_that_is_not_a_runner_result_is_refused(h200, owner):
    with pytest.raises(services.ServiceError):
        services.import_runner_result(
            owner=owner, hardware=h200, result={"rows": []}, source="test"
        )
    assert Run.objects.count() == 0


@pytest.fixture
def h200_concurrency(user, db):
    """The H200's concurrency result (docs/gpu-results/h200-run4): (its hardware kind, [the
    baseline run, the speculative run])."""
    return load_h200_concurrency(owner=user)


def test_the_h200_concurrency_file_is_stored_with_its_baseline(h200_concurrency):
    _, (baseline, speculative) = h200_concurrency
    result = json.loads((RESULTS_DIR / CONCURRENCY_FILE).read_text())

    assert [p["concurrency"] for p in speculative.raw_result["points"]] == CONCURRENCY_LEVELS
    assert speculative.synthetic and speculative.lossless is None and speculative.fidelity == ""
    assert result["summary"]["crossover_concurrency"] == 4
    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert entry.baseline_run == baseline
