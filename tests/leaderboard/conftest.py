"""Fixtures for the service's tests: tiny real GGUF models, registered, and a served hardware kind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.core.cache import cache

from leaderboard import services, tasks
from leaderboard.models import Hardware, ModelFile
from runner.fixtures import write_fixtures


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
    cache.clear()


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Benchmark jobs sent to the broker, captured instead of sent."""
    sent: list[dict] = []
    monkeypatch.setattr(
        tasks.run_benchmark_job, "apply_async", lambda **options: sent.append(options)
    )
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
def hardware(db) -> Hardware:
    return services.register_hardware(gpu_name="NVIDIA H200", memory_bytes=141 * 2**30)


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="ada", password="correct-horse-battery")


def fake_result(
    config_key: str,
    decode: list[float],
    *,
    draft: tuple[int, int] = (0, 0),
    tau: float | None = None,
    outputs: list[str] | None = None,
    release: str = "b11434",
    target_sha256: str | None = None,
) -> dict:
    """A result shaped like runner.benchmark.run_benchmark's, with the given per-request decode tok/s."""
    from runner.stats import summarize

    outputs = outputs or [f"out-{i}" for i in range(len(decode))]
    requests = [
        {
            "index": i, "phase": "measure", "point": 0, "input_tokens": None, "prompt_n": 20,
            "prompt_ms": 5.0, "predicted_n": 64, "predicted_ms": 64_000 / value,
            "decode_tokens_per_second": value, "end_to_end_tokens_per_second": value * 0.9,
            "ttft_ms": 6.0, "wall_ms": 70_000 / value, "draft_n": draft[0] // max(len(decode), 1),
            "draft_n_accepted": draft[1] // max(len(decode), 1), "verify_steps": 10, "tau": tau,
            "accepted_per_position": [], "output_sha256": outputs[i], "first_divergence": None,
        }
        for i, value in enumerate(decode)
    ]  # fmt: skip
    return {
        "schema_version": 1,
        "config": {},
        "config_key": config_key,
        "synthetic": False,
        "engine": {
            "release": release,
            "backend": "cuda",
            "build_flags": [],
            "server_path": "/x",
            "source": "built",
        },
        "summary": {
            "decode_tokens_per_second": summarize(decode),
            "end_to_end_tokens_per_second": summarize([v * 0.9 for v in decode]),
            "ttft_ms": summarize([6.0] * len(decode)),
            "acceptance_rate": draft[1] / draft[0] if draft[0] else None,
            "tau": tau,
            "draft_tokens": draft[0],
            "draft_accepted": draft[1],
            "verify_steps": 10 * len(decode),
            "acceptance_by_position": None,
            "peak_memory_bytes": 123_456_789,
            "memory_kind": "gpu",
            "speedup": None,
            "lossless": None,
            "baseline_decode_tokens_per_second": None,
            "degenerate": False,
            "gpu_seconds": 12.5,
        },
        "points": [],
        "requests": requests,
        "baseline": None,
        "provenance": {
            "argv": ["llama-server", "-m", "tiny-qwen3.gguf"],
            "command": "llama-server -m tiny-qwen3.gguf --spec-type draft-simple",
            "models": {"target": {"sha256": target_sha256} if target_sha256 else {}, "draft": None},
            "system": {
                "gpu": "NVIDIA H200",
                "driver": "580.1",
                "cuda": "13.0",
                "hostname": "gpu-1",
            },
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T00:01:00+00:00",
        },
    }


@pytest.fixture
def make_result():
    """Builds fake runner results: make_result(config_key, [decode tok/s per request], ...)."""
    return fake_result


@contextmanager
def celery_broker(url: str) -> Iterator[str]:
    """Point this process's Celery app at another broker for the length of a test.

    Celery reads CELERY_BROKER_URL from the environment before its own configuration, so the
    variable (which ./specboard test sets) must step aside too.
    """
    from leaderboard.celery import app

    saved_env = os.environ.pop("CELERY_BROKER_URL", None)
    previous = app.conf.broker_url
    app.conf.broker_url = url
    app._pool = None
    app.amqp._producer_pool = None
    try:
        yield url
    finally:
        app.conf.broker_url = previous
        app._pool = None
        app.amqp._producer_pool = None
        if saved_env is not None:
            os.environ["CELERY_BROKER_URL"] = saved_env


@pytest.fixture
def switch_broker():
    """celery_broker, for tests that start real workers on a broker of their own."""
    return celery_broker
