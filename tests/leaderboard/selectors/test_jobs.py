"""A job's status and cost (selectors.jobs): its token budget before it runs, its GPU and engine
seconds after, CPU-seconds rather than zero GPU-seconds on a CPU host, on its page and in the
API alike."""

from __future__ import annotations

import pytest

from leaderboard import selectors, services
from leaderboard.models import Job, Run

BASELINE = {
    "target_model": "tiny-qwen3.gguf",
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


@pytest.fixture
def job(user, models, hardware, enqueued) -> Job:
    return services.submit_config(owner=user, data=BASELINE, hardware_slug=hardware.slug)


def test_a_finished_job_shows_its_gpu_and_engine_seconds(job, make_result):
    result = make_result(job.config.key, [100.0])
    result["summary"]["engine_seconds"] = 14.0
    services.record_result(job_id=job.pk, result=result)

    status = selectors.job_status(job=selectors.job_by_id(job_id=job.pk))

    assert status["gpu_seconds"] == 12.5 and status["engine_seconds"] == 14.0


def test_a_job_shows_its_token_budget_before_it_runs_and_its_cost_after(
    client, user, job, make_result
):
    from runner.config import parse_config
    from runner.protocols import token_budget

    expected = token_budget(parse_config(job.config.canonical))
    client.force_login(user)

    queued = client.get(f"/api/v1/jobs/{job.pk}").json()
    assert queued["status"] == "queued"
    assert queued["token_budget"] == expected and expected["total_tokens"] > 0
    assert queued["gpu_seconds"] is None
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"about {expected['total_tokens']} tokens" in page and "GPU-seconds" not in page

    services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0]))

    finished = client.get(f"/api/v1/jobs/{job.pk}").json()
    assert finished["gpu_seconds"] == 12.5 and finished["token_budget"] == expected
    assert "12.5 GPU-seconds" in client.get(f"/jobs/{job.pk}/").content.decode()
    listing = client.get("/jobs/").content.decode()
    assert "12.5 GPU-s" in listing and str(expected["total_tokens"]) in listing


def test_a_cpu_host_shows_cpu_seconds_not_zero_gpu_seconds(
    client, user, hardware, models, make_result, enqueued
):
    job = services.submit_config(
        owner=user,
        data={
            "target_model": "tiny-qwen3.gguf",
            "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
        },
        hardware_slug=hardware.slug,
    )
    result = make_result(job.config.key, [20.0, 21.0])
    result["engine"]["backend"] = "cpu"
    result["summary"] |= {"gpu_seconds": 0.0, "engine_seconds": 14.0}
    services.record_result(job_id=job.pk, result=result)
    run = Run.objects.get(job=job)
    assert run.engine_backend == "cpu"

    cost = selectors.job_cost(job=selectors.job_by_id(job_id=job.pk))

    assert cost["gpu_seconds"] is None and cost["engine_seconds"] == 14.0
    client.force_login(user)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "14.0 CPU-seconds" in page and "GPU-seconds" not in page
    assert "14.0 CPU-s" in client.get("/jobs/").content.decode()
    assert client.get(f"/api/v1/jobs/{job.pk}").json()["gpu_seconds"] is None
