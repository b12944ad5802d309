"""Pytest fixtures for the service's tests and the system tests: tiny real GGUF models,
registered (and cleared of their test-weights mark), a served hardware kind, a GPU host, made-up
job histories for the queue, a user, captured task messages, runner results, the concurrency and
categories results imported, and a broker switch. The conftest files of tests/leaderboard and
tests/system import them."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from django.core.cache import caches
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from leaderboard import services
from leaderboard.messaging import dispatch, signing
from leaderboard.models import GpuHost, Hardware, Job, ModelFile, Run
from leaderboard.services.board import mark_test_weights
from runner.gguf.tiny_models import write_fixtures
from tests.support.brokers import celery_broker
from tests.support.job_histories import job_history, register_host, submit_first_job
from tests.support.protocol_results import protocol_result
from tests.support.protocol_runs import import_category_runs, import_concurrency_runs
from tests.support.results import fake_result


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The runner's tiny GGUF fixtures, written once per session."""
    return write_fixtures(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def static_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("staticfiles")


@pytest.fixture(autouse=True)
def site_settings(settings, tiny_models: dict[str, Path], static_root: Path) -> None:
    settings.SPECBOARD_MODELS_DIR = next(iter(tiny_models.values())).parent
    settings.STATIC_ROOT = static_root
    settings.WHITENOISE_USE_FINDERS = True
    # Tests run with DEBUG off but without collectstatic: serve static names unhashed.
    settings.STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # No worker runs beside these tests (those that start one ask with their own timeout): a
    # page that asks the broker which workers answer waits a moment, not a second.
    settings.SPECBOARD_BROKER_INSPECT_SECONDS = 0.05
    for cache in caches.all():
        cache.clear()
    # The same for what a queued job's estimate rests on
    # (tests/leaderboard/selectors/test_queue.py).
    settings.SPECBOARD_QUEUE_ESTIMATE_SECONDS = 0
    # A change shows on the next request (tests/leaderboard/test_page_cache.py takes the
    # deployment's versions trusted a second and pages computed behind the request).
    settings.SPECBOARD_BOARD_VERSION_SECONDS = 0
    settings.SPECBOARD_PAGES_REFRESH_BEHIND = False


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Benchmark jobs sent to the broker, captured instead of sent."""
    sent: list[dict] = []

    def capture(name: str, *, kwargs: dict, queue: str, task_id: str | None = None) -> None:
        assert name == dispatch.RUN_BENCHMARK
        sent.append({"kwargs": kwargs, "queue": queue, "task_id": task_id})

    monkeypatch.setattr(dispatch, "send", capture)
    return sent


@pytest.fixture
def models(db) -> dict[str, ModelFile]:
    """Every tiny fixture model, registered the way an admin would."""
    names = (
        "tiny-qwen3",
        "tiny-dflash",
        "tiny-dflash-draft-premerge",
        "tiny-dflash-wide",
        "tiny-mtp",
    )
    return {name: services.register_model(path=f"{name}.gguf") for name in names}


@pytest.fixture
def ranked_models(models) -> dict[str, ModelFile]:
    """The tiny fixture models cleared of their test-weights mark, as an admin could: only rows
    of real weights compete, and the tests using these are about what competes."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


@pytest.fixture
def hardware(db) -> Hardware:
    return services.register_hardware(gpu_name="NVIDIA H200", memory_bytes=141 * 2**30)


@pytest.fixture
def signed_by_host(hardware):
    """Signs messages as a registered GPU host of `hardware`, which claims the jobs it starts,
    for the job's current delivery (one is given to a job made without a message) with a fresh
    sequence number: signed_by_host(kind, job_id, body) -> the task's keyword arguments
    {"delivery", "sequence", "host", "signature"}."""
    host, key = services.register_gpu_host(name="test-host", hardware_slug=hardware.slug)

    def sign(kind: str, job_id: int, body: object) -> dict[str, object]:
        if kind != "progress":  # the host claims the job before it reports on it
            Job.objects.filter(id=job_id, host=None).update(host=host)
        Job.objects.filter(id=job_id, delivery="").update(delivery=signing.new_delivery())
        delivery = Job.objects.filter(id=job_id).values_list("delivery", flat=True).first() or ""
        sequence = dispatch.next_sequence()
        signature = signing.sign(
            key=key, kind=kind, job_id=job_id, delivery=delivery, sequence=sequence, body=body
        )
        return {
            "delivery": delivery,
            "sequence": sequence,
            "host": host.name,
            "signature": signature,
        }

    return sign


@pytest.fixture
def host(hardware) -> GpuHost:
    """A registered GPU host, lab-a, of `hardware`."""
    return register_host(hardware)


@pytest.fixture
def first_job(user, models, hardware, enqueued) -> Job:
    """One queued baseline job submitted the ordinary way: its config row serves the others."""
    return submit_first_job(user, hardware)


@pytest.fixture
def job_factory(first_job):
    """Made-up job histories: jobs of the first job's config with chosen timestamps
    (tests.support.job_histories)."""
    return job_history(first_job)


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="ada", password="correct-horse-battery")


@pytest.fixture
def make_result(tiny_models: dict[str, Path]):
    """Builds runner results: make_result(config or config key, [decode tok/s per request],
    ...)."""
    return functools.partial(fake_result, models_dir=next(iter(tiny_models.values())).parent)


@pytest.fixture
def make_protocol_result(tiny_models: dict[str, Path]):
    """Builds concurrency and categories results: make_protocol_result(config, records,
    baseline_records, ...) (tests.support.protocol_results.protocol_result)."""
    return functools.partial(protocol_result, models_dir=next(iter(tiny_models.values())).parent)


@pytest.fixture
def concurrency_runs(user, ranked_models, hardware, make_protocol_result) -> list[Run]:
    """A DFlash config's concurrency result with its paired baseline, imported as a result file
    (tests.support.protocol_runs: levels 1, 2 and 4), on ranked models."""
    return import_concurrency_runs(user, hardware, make_protocol_result)


@pytest.fixture
def category_runs(user, models, hardware, make_protocol_result) -> list[Run]:
    """A DFlash config's categories result with its paired baseline, imported as a result file
    (tests.support.protocol_runs: code, math and translation, 80 J a request)."""
    return import_category_runs(user, hardware, make_protocol_result)


@pytest.fixture
def migrate(transactional_db):
    """migrate([(app, migration)]) moves the schema there and returns that state's apps (a
    fresh executor each time, so rows made in between are seen); the schema is migrated back to
    the latest afterwards."""

    def to(targets: list[tuple[str, str]]):
        executor = MigrationExecutor(connection)
        executor.migrate(targets)
        return executor.loader.project_state(targets).apps

    yield to
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.fixture
def switch_broker():
    """celery_broker, for tests that start real workers on a broker of their own."""
    return celery_broker
