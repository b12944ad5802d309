"""What the site says about output fidelity: the runner's grade shown for measured runs only, and
no lossless verdict between runs that answered different prompts."""

from __future__ import annotations

import hashlib

import pytest
from django.test import Client

from leaderboard import services
from leaderboard.models import Run
from runner.fidelity import NEAR_TIE_MARGIN
from tests.support.baselines import submit_baseline

NGRAM = {
    "target_model": "tiny-qwen3.gguf",
    "spec_types": ["ngram-mod"],
    "protocol": {"name": "quick", "n_predict": 64, "runs": 2},
}
GRADE = {
    "verdict": "near ties only",
    "requests": 2,
    "identical_requests": 1,
    "identical_share": 0.5,
    "mean_identical_prefix_tokens": 48.0,
    "mean_identical_prefix_share": 0.75,
    "near_ties": 1,
    "mismatches": 0,
    "unclassified": 0,
    "near_tie_margin": NEAR_TIE_MARGIN,
}


def prompts(*labels: str) -> list[str]:
    return [hashlib.sha256(label.encode()).hexdigest() for label in labels]


def with_prompts(result: dict, hashes: list[str]) -> dict:
    for record, prompt in zip(result["requests"], hashes, strict=True):
        record["prompt_sha256"] = prompt
    return result


@pytest.fixture
def jobs(user, models, hardware, enqueued):
    speculative = services.submit_config(owner=user, data=NGRAM, hardware_slug=hardware.slug)
    baseline = submit_baseline(speculative)
    for job in (speculative, baseline):
        services.record_progress(job_id=job.pk, progress={"phase": "started"})
    return speculative, baseline


def test_runs_that_answered_other_prompts_get_no_lossless_verdict(jobs, make_result):
    speculative, baseline = jobs
    same_output = ["a", "b"]
    services.record_result(
        job_id=baseline.pk,
        result=with_prompts(
            make_result(baseline.config.key, [50.0, 50.0], outputs=same_output), prompts("t", "t")
        ),
    )
    services.record_result(
        job_id=speculative.pk,
        result=with_prompts(
            make_result(speculative.config.key, [90.0, 95.0], outputs=same_output),
            prompts("varied-1", "varied-2"),
        ),
    )

    assert Run.objects.get(job=speculative).lossless is None


def test_runs_that_answered_the_same_prompts_are_compared(jobs, make_result):
    speculative, baseline = jobs
    services.record_result(
        job_id=baseline.pk,
        result=with_prompts(
            make_result(baseline.config.key, [50.0, 50.0], outputs=["a", "b"]), prompts("p", "q")
        ),
    )
    services.record_result(
        job_id=speculative.pk,
        result=with_prompts(
            make_result(speculative.config.key, [90.0, 95.0], outputs=["a", "c"]), prompts("p", "q")
        ),
    )

    assert Run.objects.get(job=speculative).lossless is False


def test_the_run_page_shows_the_runners_fidelity_grade_for_measured_runs_only(
    jobs, make_result, client: Client
):
    speculative, _ = jobs
    result = make_result(speculative.config.key, [90.0, 95.0])
    result["summary"]["fidelity"] = GRADE
    run = services.record_result(job_id=speculative.pk, result=result)

    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "near ties only" in page and "1 of 2 requests identical" in page

    Run.objects.filter(pk=run.pk).update(self_reported=True)
    services.raise_board_version()  # as the services do with every change of a run
    assert "near ties only" not in client.get(f"/runs/{run.pk}/").content.decode()
