"""A speculative job measures its paired baseline in the same runner invocation, so its fidelity
is graded (the baseline's own top-2 margin at each divergence) and the board row says which:
identical, near ties only, or a real mismatch. Synthetic acceptance claims nothing and keeps
sharing one baseline job."""

from __future__ import annotations

import pytest
from django.test import Client

from leaderboard import services
from leaderboard.models import Job, LeaderboardEntry, Run
from leaderboard.services.limits import check_allowance
from runner.config import BenchmarkConfig
from runner.fidelity import NEAR_TIE_MARGIN
from runner.protocols import job_token_budget, token_budget
from tests.support.baselines import submit_baseline, with_baseline_section

DRAFT_SIMPLE = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-qwen3.gguf",
    "spec_types": ["draft-simple"],
    "n_max": 4,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 2},
}
SYNTHETIC = DRAFT_SIMPLE | {"spec_synth_len": 3.0}


def diverged(result: dict, *kinds: str | None) -> dict:
    """Mark each measured request identical (None) or diverged at token 10 with a class, its
    only divergence to the request's end (runner.fidelity judges every one)."""
    for record, kind in zip(result["requests"], kinds, strict=True):
        record["first_divergence"] = None if kind is None else 10
        record["divergence"] = kind
        record["divergence_margin"] = None if kind is None else 0.05
        record["divergences"] = (
            [] if kind is None else [{"position": 10, "margin": 0.05, "kind": kind}]
        )
    return result


def start(job: Job) -> None:
    services.record_progress(job_id=job.pk, progress={"phase": "started"})


@pytest.fixture
def speculative(user, models, hardware, enqueued) -> Job:
    return services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)


def test_a_speculative_job_is_sent_with_its_baseline_and_a_synthetic_one_without(
    user, models, hardware, enqueued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        speculative = services.submit_config(
            owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug
        )
        synthetic = services.submit_config(owner=user, data=SYNTHETIC, hardware_slug=hardware.slug)
    sent = {message["kwargs"]["job_id"]: message["kwargs"] for message in enqueued}

    assert sent[speculative.pk]["with_baseline"] is True
    assert sent[synthetic.pk]["with_baseline"] is False
    # Only the synthetic one gets a separate baseline job, and that one runs alone.
    assert not speculative.baseline_jobs.exists()
    assert sent[synthetic.baseline_jobs.get().pk]["with_baseline"] is False
    assert len(sent) == Job.objects.count() == 3


def test_both_sections_are_stored_and_the_run_is_graded(speculative, make_result, client: Client):
    baseline_config = speculative.config.baseline
    start(speculative)
    result = with_baseline_section(
        diverged(
            make_result(speculative.config.key, [150.0, 160.0], outputs=["a", "b"]),
            None,
            "near tie",
        ),
        make_result(baseline_config.key, [50.0, 52.0], outputs=["a", "c"]),
    )

    run = services.record_result(job_id=speculative.pk, result=result)

    assert run is not None and run.fidelity == "near ties only"
    beside = Run.objects.get(config=baseline_config, job__isnull=True)
    assert beside.provenance["measured_with_job"] == speculative.pk
    assert beside.n == 2 and beside.decode_mean == pytest.approx(51.0)
    # The row pairs with the baseline measured beside it and shows the verdict.
    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert entry.fidelity == "near ties only"
    assert entry.speedup == pytest.approx(155.0 / 51.0)
    assert LeaderboardEntry.objects.get(config=baseline_config).runs_count == 1
    page = client.get("/").content.decode()
    assert "near ties only" in page and ">not lossless<" not in page
    # The badge's tooltip names the grade's threshold.
    assert f"margin below {NEAR_TIE_MARGIN} nats" in page


def test_a_row_shows_its_worst_graded_batch(speculative, user, hardware, make_result):
    baseline_config = speculative.config.baseline
    again = services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)
    for job, kinds, decode in ((speculative, (None, None), [150.0, 150.0]),
                               (again, (None, "mismatch"), [170.0, 170.0])):  # fmt: skip
        start(job)
        services.record_result(
            job_id=job.pk,
            result=with_baseline_section(
                diverged(make_result(job.config.key, decode), *kinds),
                make_result(baseline_config.key, [50.0, 50.0]),
            ),
        )

    assert {run.fidelity for run in Run.objects.filter(config=speculative.config)} == {
        "identical",
        "mismatch",
    }
    assert LeaderboardEntry.objects.get(config=speculative.config).fidelity == "mismatch"


def test_a_result_without_a_baseline_section_is_not_graded(speculative, make_result):
    start(speculative)
    result = diverged(make_result(speculative.config.key, [150.0, 150.0]), None, None)

    run = services.record_result(job_id=speculative.pk, result=result)

    assert run.fidelity == ""
    assert LeaderboardEntry.objects.get(config=speculative.config).fidelity == ""


def test_a_baseline_measured_beside_a_job_means_no_separate_baseline_job_later(
    speculative, user, hardware, make_result
):
    start(speculative)
    services.record_result(
        job_id=speculative.pk,
        result=with_baseline_section(
            make_result(speculative.config.key, [150.0, 150.0]),
            make_result(speculative.config.baseline.key, [50.0, 50.0]),
        ),
    )

    # Even a synthetic config, which does not measure its own, pairs with that baseline run.
    later = services.submit_config(owner=user, data=SYNTHETIC, hardware_slug=hardware.slug)

    assert later.config.baseline == speculative.config.baseline
    assert not Job.objects.filter(auto_scheduled=True).exists()


def test_a_job_that_measures_its_baseline_is_charged_for_it(user, settings, db):
    config = BenchmarkConfig.model_validate(DRAFT_SIMPLE)
    synthetic = BenchmarkConfig.model_validate(SYNTHETIC)

    assert job_token_budget(config) == token_budget(config, with_baseline=True)
    assert job_token_budget(synthetic) == token_budget(synthetic)
    assert job_token_budget(config.baseline()) == token_budget(config.baseline())
    # Just enough for the config alone is not enough for the config and its baseline.
    settings.SPECBOARD_MAX_JOB_TOKENS = token_budget(config)["total_tokens"]
    with pytest.raises(services.LimitReached):
        check_allowance(user=user, config=config)
    check_allowance(user=user, config=synthetic)


def test_the_row_pairs_with_the_baseline_measured_beside_it_not_the_fastest(
    speculative, make_result
):
    separate = submit_baseline(speculative)
    start(separate)
    services.record_result(
        job_id=separate.pk, result=make_result(separate.config.key, [60.0, 60.0])
    )
    start(speculative)
    services.record_result(
        job_id=speculative.pk,
        result=with_baseline_section(
            make_result(speculative.config.key, [150.0, 150.0]),
            make_result(separate.config.key, [50.0, 50.0]),
        ),
    )

    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert entry.baseline_run.provenance["measured_with_job"] == speculative.pk
    assert entry.speedup == pytest.approx(3.0)
