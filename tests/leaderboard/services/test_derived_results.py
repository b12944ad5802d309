"""What a self-reported upload claims is not what it stores: lossless is never taken from the
file, its speedup is recomputed from its own baseline section, and our workers' results keep the
values their runner found (services.record_self_reported_result, services.record_result)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard import services
from leaderboard.models import LeaderboardEntry, Run
from runner.config import BenchmarkConfig

RESULTS_DIR = Path(__file__).parents[3] / "docs" / "gpu-results" / "h200-run2"
SPECULATIVE = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


def claiming(result: dict, **claims) -> dict:
    """The result with its summary's pairing fields replaced by claims."""
    return result | {"summary": result["summary"] | claims}


def test_an_upload_claiming_a_speedup_its_sections_do_not_give_is_refused(db, make_result):
    honest = make_result(BenchmarkConfig.model_validate(SPECULATIVE), [390.0, 395.0, 400.0])
    for claims in ({"speedup": 9.0}, {"baseline_decode_tokens_per_second": 44.0}):
        with pytest.raises(services.ServiceError, match="but its points and the baseline's give"):
            services.record_self_reported_result(
                result=claiming(honest, **claims), hardware_name="RTX 4090"
            )
    assert not Run.objects.exists()


def test_an_upload_claiming_lossless_stores_it_unknown(db, make_result):
    honest = make_result(BenchmarkConfig.model_validate(SPECULATIVE), [390.0, 395.0, 400.0])
    result = claiming(honest, lossless=True)

    [run] = services.record_self_reported_result(result=result, hardware_name="RTX 4090")

    run.refresh_from_db()
    assert run.self_reported and run.decode_mean == pytest.approx(395.0)
    assert run.lossless is None and run.speedup is None
    entry = LeaderboardEntry.objects.get(config=run.config)
    assert entry.lossless is None and entry.speedup is None
    # The file is kept as it came, claims included, so what was claimed stays visible.
    assert run.raw_result["summary"]["lossless"] is True


def test_an_uploads_speedup_is_derived_from_its_own_baseline_sections_requests(db):
    result = json.loads((RESULTS_DIR / "8b-dflash15-depth.json").read_text())
    runners_speedup = result["summary"]["speedup"]
    with pytest.raises(services.ServiceError, match="summary.speedup is 50"):
        services.record_self_reported_result(
            result=claiming(result, speedup=50.0), hardware_name="H100 SXM"
        )
    result = claiming(result, lossless=True, lossless_note=None)

    baseline, run = services.record_self_reported_result(result=result, hardware_name="H100 SXM")

    assert run.speedup == pytest.approx(runners_speedup, rel=1e-12)
    assert Run.objects.get(pk=run.pk).speedup == pytest.approx(2.1589, abs=1e-4)
    assert run.lossless is None and baseline.lossless is None and baseline.speedup is None
    assert run.config.baseline == baseline.config


def test_a_workers_result_keeps_the_lossless_and_speedup_its_runner_found(
    user, models, hardware, enqueued, make_result
):
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    # A speedup needs the baseline section it divides by: without one, the runner claims none.
    result = claiming(make_result(job.config.key, [100.0, 110.0]), lossless=True)

    run = services.record_result(job_id=job.pk, result=result)

    run.refresh_from_db()
    assert run.lossless is True and run.speedup is None
    assert not run.self_reported


def test_an_upload_whose_summary_disagrees_with_its_requests_stores_nothing(db, make_result):
    honest = make_result(BenchmarkConfig.model_validate(SPECULATIVE), [390.0, 395.0, 400.0])
    result = claiming(
        honest,
        lossless=True,
        decode_tokens_per_second=honest["summary"]["decode_tokens_per_second"] | {"mean": 5000.0},
    )

    with pytest.raises(services.ServiceError) as refused:
        services.record_self_reported_result(result=result, hardware_name="RTX 4090")

    [message] = refused.value.errors["result"]
    assert "summary.decode_tokens_per_second.mean is 5000" in message and "give 395" in message
    assert not Run.objects.exists() and not LeaderboardEntry.objects.exists()
