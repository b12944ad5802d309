"""Shared fixtures for runner tests."""

from pathlib import Path

import pytest

from runner.gguf.tiny_models import write_fixtures


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny GGUF models from runner.gguf.tiny_models, written once per test session."""
    return write_fixtures(tmp_path_factory.mktemp("tiny-models"))


@pytest.fixture(scope="session")
def models_dir(tiny_models: dict[str, Path]) -> Path:
    """The folder the tiny models were written to: a models_dir for run_benchmark."""
    return next(iter(tiny_models.values())).parent


@pytest.fixture(scope="session")
def engine():
    """The cached llama-server build (built on first use): for the tests marked engine."""
    from runner.engines.build import locate

    return locate()
