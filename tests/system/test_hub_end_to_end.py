"""End to end: a model registered by Hugging Face reference is fetched by a real GPU worker
from a local Hub (real huggingface_hub, real HTTP) into its model cache and benchmarked on a
real llama-server; the GPU worker has no database and its own, empty, models directory."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest
import redis
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.messaging.workers import db_worker_argv, gpu_worker_argv
from leaderboard.models import Job, LeaderboardEntry, ModelFile
from leaderboard.settings import redis_answers
from runner.engines.build import locate
from runner.provenance import cpu_name
from tests.support.brokers import database_url, gpu_worker_environment
from tests.support.hub_server import HubServer
from tests.system.test_end_to_end import REPOSITORY, wait_for_jobs

pytestmark = [pytest.mark.e2e, pytest.mark.engine]

# A Redis database of its own, apart from test_end_to_end's, so both may run at once.
E2E_REDIS = os.environ.get("SPECBOARD_HUB_E2E_BROKER_URL", "redis://127.0.0.1:6379/13")
REPO = "tiny-org/tiny-qwen3-GGUF"
FILE = "tiny-qwen3.gguf"


@pytest.fixture
def hub(settings, tiny_models):
    with HubServer() as server:
        server.commit(REPO, {FILE: tiny_models[FILE]})
        settings.SPECBOARD_HF_ENDPOINT = server.endpoint
        yield server


@pytest.fixture
def hardware(transactional_db):
    return services.register_hardware(
        gpu_name="CPU hub end-to-end", slug=f"hub-{uuid.uuid4().hex[:8]}", cpu_model=cpu_name()
    )


@pytest.fixture
def broker(switch_broker):
    if not redis_answers(E2E_REDIS):
        pytest.skip(f"no Redis answers at {E2E_REDIS}")
    redis.Redis.from_url(E2E_REDIS).flushdb()
    with switch_broker(E2E_REDIS):
        yield E2E_REDIS


@pytest.fixture
def gpu_cache(tmp_path) -> Path:
    return tmp_path / "gpu-host-cache"


@pytest.fixture
def workers(broker, hub, hardware, tiny_models, tmp_path, gpu_cache):
    locate()
    base = os.environ | {"CELERY_BROKER_URL": broker, "SECRET_KEY": "end-to-end-test"}
    empty_models = tmp_path / "gpu-host-models"
    empty_models.mkdir()
    name = uuid.uuid4().hex[:8]
    processes = [
        subprocess.Popen(
            db_worker_argv(hostname=f"db-{name}@%h", quiet=True),
            env=base
            | {
                "DATABASE_URL": database_url(),
                "SPECBOARD_MODELS_DIR": str(next(iter(tiny_models.values())).parent),
            },
            cwd=REPOSITORY,
        ),
        subprocess.Popen(
            gpu_worker_argv(hardware_slug=hardware.slug, hostname=f"gpu-{name}@%h"),
            env=base
            | gpu_worker_environment(hardware)
            | {
                # Nothing on this host but the engine: the model comes from the (local) Hub.
                "SPECBOARD_MODELS_DIR": str(empty_models),
                "SPECBOARD_MODEL_CACHE_DIR": str(gpu_cache),
                "SPECBOARD_HF_ENDPOINT": hub.endpoint,
                "HF_HUB_DISABLE_XET": "1",
            },
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


def test_a_model_registered_by_hub_reference_is_fetched_by_a_gpu_worker_and_benchmarked(
    transactional_db, hub, hardware, user, django_user_model, workers, gpu_cache, tiny_models
):
    admin = django_user_model.objects.create_user(username="root", password="x", is_staff=True)
    client = APIClient()
    client.force_authenticate(admin)
    registered = client.post(
        "/api/v1/models", {"hf_repo": REPO, "hf_file": FILE, "revision": "main"}, format="json"
    )
    assert registered.status_code == 201, registered.json()
    model = ModelFile.objects.get()
    assert hub.cdn_gets() and all(get.range for get in hub.cdn_gets())  # only the header

    client.force_authenticate(user)
    config = {
        "target_model": model.path,
        "threads": 2,
        "protocol": {"name": "quick", "n_predict": 32, "runs": 2, "warmup": 1},
    }
    response = client.post(
        "/api/v1/submissions", {"hardware": hardware.slug, "config": config}, format="json"
    )
    assert response.status_code == 201, response.json()

    (job,) = wait_for_jobs(timeout_s=600)
    assert (job.status, job.error) == (Job.Status.SUCCEEDED, "")
    cached = gpu_cache / model.path
    assert cached.read_bytes() == tiny_models[FILE].read_bytes()
    full_downloads = [get for get in hub.cdn_gets() if get.range is None]
    assert len(full_downloads) == 1  # the GPU host fetched it once
    entry = LeaderboardEntry.objects.get(config__target=model)
    run = entry.best_run
    assert (
        run.requests.count() == 2 and run.provenance["models"]["target"]["sha256"] == model.sha256
    )
