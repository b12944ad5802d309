"""Fixtures for the service's tests: tiny real GGUF models, registered, and a served hardware kind."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.core.cache import cache

from leaderboard import dispatch, services
from leaderboard.models import Config, Hardware, ModelFile
from runner.config import BenchmarkConfig
from runner.gguf.inspect import inspect_model
from runner.gguf.tiny_models import write_fixtures
from runner.results import BenchmarkResult
from runner.stats import summarize


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
def hardware(db) -> Hardware:
    return services.register_hardware(gpu_name="NVIDIA H200", memory_bytes=141 * 2**30)


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="ada", password="correct-horse-battery")


def _output_hash(label: str) -> str:
    """A test's output label ("a", "out-3") as the sha256 a runner record carries."""
    if len(label) == 64 and all(c in "0123456789abcdef" for c in label):
        return label
    return hashlib.sha256(label.encode()).hexdigest()


def _model_info(reference: str, models_dir: Path) -> dict:
    """A model's provenance entry: its registered metadata, or its file read by the runner."""
    try:
        row = ModelFile.objects.filter(path=reference).first()
    except RuntimeError:  # a test without database access (the GPU side)
        row = None
    if row is not None:
        return row.metadata | {"path": row.path, "sha256": row.sha256}
    return inspect_model(models_dir / reference).as_dict() | {"path": reference}


def fake_result(
    config: BenchmarkConfig | str,
    decode: list[float],
    *,
    models_dir: Path,
    draft: tuple[int, int] = (0, 0),
    tau: float | None = None,
    outputs: list[str] | None = None,
    release: str = "b11434",
    target_sha256: str | None = None,
) -> dict:
    """A runner result for a config (or a stored config's key) with the given per-request decode
    tok/s, built and checked by the runner's own result model, as JSON data."""
    if isinstance(config, str):
        config = BenchmarkConfig.from_canonical(Config.objects.get(key=config).canonical)
    outputs = outputs or [f"out-{i}" for i in range(len(decode))]
    count = max(len(decode), 1)
    requests = [
        {
            "phase": "measure", "point": 0, "input_tokens": None, "output_tokens_requested": 64,
            "prompt_n": 20, "prompt_ms": 5.0, "predicted_n": 64, "predicted_ms": 64_000 / value,
            "decode_tokens_per_second": value, "server_predicted_per_second": value * 63 / 64,
            "end_to_end_tokens_per_second": value * 0.9, "ttft_ms": 6.0,
            "ttft_source": "server prompt time", "wall_ms": 70_000 / value,
            "draft_n": draft[0] // count, "draft_n_accepted": draft[1] // count,
            "verify_steps": 10, "tau": tau, "accepted_per_position": [],
            "output_sha256": _output_hash(outputs[i]), "distinct_4gram_ratio": 0.9,
            "stopped_early": False, "index": i, "first_divergence": None,
        }
        for i, value in enumerate(decode)
    ]  # fmt: skip
    target = _model_info(config.target_model, models_dir)
    if target_sha256:
        target["sha256"] = target_sha256
    engine = {
        "server_path": "/x",
        "release": release,
        "backend": "cuda",
        "build_flags": [],
        "source": "built",
    }
    result = {
        "config": config.canonical(),
        "config_key": config.key,
        "synthetic": config.is_synthetic,
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
            "degenerate": False,
            "gpu_seconds": 12.5,
            "engine_seconds": 12.5,
            "load_seconds": 1.0,
            "harness_overhead_seconds": 0.1,
            "speedup": None,
            "lossless": None,
            "baseline_decode_tokens_per_second": None,
            "lossless_note": None,
        },
        "points": [],
        "requests": requests,
        "provenance": {
            "argv": ["llama-server", "-m", "tiny-qwen3.gguf"],
            "command": "llama-server -m tiny-qwen3.gguf --spec-type draft-simple",
            "models": {
                "target": target,
                "draft": _model_info(config.draft_model, models_dir)
                if config.draft_model
                else None,
            },
            "engine_log_tail": "",
            "engine": engine,
            "system": {
                "gpu": "H200",
                "driver": "580.1",
                "cuda": "13.0",
                "hostname": "gpu-1",
            },
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T00:01:00+00:00",
            "token_budget": {
                "requests": len(decode),
                "prompt_tokens": 20 * len(decode),
                "generated_tokens": 64 * len(decode),
                "total_tokens": 84 * len(decode),
            },
        },
        "schema_version": 1,
        "engine": engine,
        "baseline": None,
    }
    return BenchmarkResult.model_validate(result).model_dump(mode="json")


@pytest.fixture
def make_result(tiny_models: dict[str, Path]):
    """Builds runner results: make_result(config or config key, [decode tok/s per request], ...)."""
    return functools.partial(fake_result, models_dir=next(iter(tiny_models.values())).parent)


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
