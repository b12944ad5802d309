"""End to end: an API submission, real Celery workers on the real broker, a real llama-server.

The GPU worker runs with SPECBOARD_ROLE=gpu-worker, whose settings have no database at all:
its results reach the database only through the broker and the db worker.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import redis
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.messaging.workers import db_worker_argv, gpu_worker_argv
from leaderboard.models import Job, LeaderboardEntry, Run
from leaderboard.settings import redis_answers
from runner.engines.build import locate
from runner.provenance import cpu_name
from tests.support.brokers import database_url, gpu_worker_environment

pytestmark = [pytest.mark.e2e, pytest.mark.engine]

REPOSITORY = Path(__file__).resolve().parents[2]
# A Redis database of its own (flushed by the test), so that no other worker takes our messages.
E2E_REDIS = os.environ.get("SPECBOARD_E2E_BROKER_URL", "redis://127.0.0.1:6379/14")
CONFIG = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-qwen3.gguf",
    "spec_types": ["draft-simple"],
    "n_max": 4,
    "threads": 2,
    "protocol": {"name": "quick", "n_predict": 48, "runs": 3, "warmup": 1},
}


@pytest.fixture
def broker(switch_broker):
    if not redis_answers(E2E_REDIS):
        pytest.skip(f"no Redis answers at {E2E_REDIS}")
    # The database is this test's own: drop messages that an interrupted earlier run left behind.
    redis.Redis.from_url(E2E_REDIS).flushdb()
    with switch_broker(E2E_REDIS):
        yield E2E_REDIS


@pytest.fixture
def workers(broker, tiny_models, hardware):
    locate()  # builds llama-server once, or finds the cached build
    base = os.environ | {
        "CELERY_BROKER_URL": broker,
        "SPECBOARD_MODELS_DIR": str(next(iter(tiny_models.values())).parent),
        "SECRET_KEY": "end-to-end-test",
    }
    name = uuid.uuid4().hex[:8]
    processes = [
        subprocess.Popen(
            db_worker_argv(hostname=f"db-{name}@%h", quiet=True),
            env=base | {"DATABASE_URL": database_url()},
            cwd=REPOSITORY,
        ),
        subprocess.Popen(
            gpu_worker_argv(hardware_slug=hardware.slug, hostname=f"gpu-{name}@%h"),
            env=base | gpu_worker_environment(hardware),
            cwd=REPOSITORY,
        ),
    ]
    yield processes
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def hardware(transactional_db):
    return services.register_hardware(
        gpu_name="CPU end-to-end", slug=f"e2e-{uuid.uuid4().hex[:8]}", cpu_model=cpu_name()
    )


def wait_for_jobs(timeout_s: float = 600) -> list[Job]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        jobs = list(Job.objects.order_by("id"))
        if jobs and not any(job.is_active for job in jobs):
            return jobs
        time.sleep(1)
    pytest.fail(
        f"jobs still running after {timeout_s} s: {[(j.pk, j.status, j.progress) for j in Job.objects.all()]}"
    )


def test_a_submission_is_measured_by_real_workers_and_ranked_against_the_baseline_beside_it(
    transactional_db, models, hardware, user, workers
):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_api_token(user=user, name='tests').key}")

    response = client.post(
        "/api/v1/submissions", {"hardware": hardware.slug, "config": CONFIG}, format="json"
    )
    assert response.status_code == 201, response.json()

    # One job: it measures its paired baseline in the same runner invocation.
    jobs = wait_for_jobs()
    assert [(job.status, job.error) for job in jobs] == [("succeeded", "")]
    speculative = LeaderboardEntry.objects.get(config__spec_label="draft-simple")
    baseline = LeaderboardEntry.objects.get(config__spec_label="none")
    beside = Run.objects.get(config=baseline.config)
    assert beside.job is None and beside.provenance["measured_with_job"] == jobs[0].pk
    assert speculative.baseline_run == beside and beside.requests.count() == 3
    run = speculative.best_run
    assert run.requests.count() == 3 and run.engine_release == "b11434"
    assert speculative.tokens_per_second == pytest.approx(run.decode_mean)
    assert (
        speculative.n == 3
        and speculative.ci95_low <= speculative.tokens_per_second <= speculative.ci95_high
    )
    assert speculative.baseline_entry == baseline
    assert speculative.speedup == pytest.approx(
        speculative.tokens_per_second / baseline.tokens_per_second
    )
    assert speculative.acceptance_rate > 0.5 and speculative.lossless is not None
    assert run.fidelity in {"identical", "near ties only", "mismatch"}
    assert (
        run.command.startswith(run.provenance["argv"][0])
        and "--spec-type draft-simple" in run.command
    )
    status = client.get(f"/api/v1/jobs/{jobs[0].pk}").json()
    assert status["status"] == "succeeded" and status["run_id"] == run.pk


def test_cancelling_a_running_job_stops_its_benchmark_and_frees_the_worker(
    transactional_db, models, hardware, user, workers
):
    client = APIClient()
    client.force_authenticate(user)
    long_baseline = {
        "target_model": "tiny-qwen3.gguf",
        "threads": 2,
        "protocol": {"name": "quick", "n_predict": 1024, "runs": 200, "warmup": 0},
    }
    submit = {"hardware": hardware.slug}
    job_id = client.post(
        "/api/v1/submissions", submit | {"config": long_baseline}, format="json"
    ).json()["id"]
    # Queued behind it on the same worker: a short config (its baseline measured in its own run).
    assert (
        client.post("/api/v1/submissions", submit | {"config": CONFIG}, format="json").status_code
        == 201
    )

    deadline = time.monotonic() + 300
    while Job.objects.get(pk=job_id).progress.get("done", 0) < 1:
        assert time.monotonic() < deadline, "the job never started measuring"
        time.sleep(0.5)
    assert client.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 200

    jobs = wait_for_jobs(timeout_s=180)
    assert [job.status for job in jobs] == ["cancelled", "succeeded"]
    assert jobs[0].progress["done"] < 200
    assert not hasattr(jobs[0], "run")


def test_a_rogue_gpu_host_cannot_record_a_result_for_a_job_another_host_runs(
    transactional_db, models, hardware, user, workers, make_result
):
    from leaderboard.messaging import dispatch, signing
    from leaderboard.messaging.celery import DB_QUEUE, app

    job = services.submit_config(
        owner=user,
        data={
            "target_model": "tiny-qwen3.gguf",
            "threads": 2,
            "protocol": {"name": "quick", "n_predict": 256, "runs": 6, "warmup": 0},
        },
        hardware_slug=hardware.slug,
    )
    deadline = time.monotonic() + 300
    while Job.objects.get(pk=job.pk).host_id is None:
        assert time.monotonic() < deadline, "no host claimed the job"
        time.sleep(0.2)
    honest = Job.objects.get(pk=job.pk).host
    rogue, rogue_key = services.register_gpu_host(name="rogue", hardware_slug=hardware.slug)
    forged = make_result(job.config.key, [99_999.0] * 3)
    delivery = Job.objects.get(pk=job.pk).delivery  # as if it had seen the job's message
    for name in (rogue.name, honest.name):  # under its own name, and posing as the honest host
        sequence = dispatch.next_sequence()
        signature = signing.sign(
            key=rogue_key,
            kind="result",
            job_id=job.pk,
            delivery=delivery,
            sequence=sequence,
            body=forged,
        )
        app.send_task(
            dispatch.RECORD_RESULT,
            kwargs={"job_id": job.pk, "result": forged, "host": name, "signature": signature}
            | {"delivery": delivery, "sequence": sequence},
            queue=DB_QUEUE,
        )

    (finished,) = wait_for_jobs(timeout_s=300)
    assert finished.status == "succeeded" and finished.host == honest
    run = Run.objects.get()
    assert run.job_id == job.pk and run.decode_mean < 99_999.0 and run.requests.count() == 6
