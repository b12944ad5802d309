"""Shared fixtures for runner tests."""

from pathlib import Path

import pytest

from runner.gguf.tiny_models import write_fixtures


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny GGUF models from runner.gguf.tiny_models, written once per test session."""
    return write_fixtures(tmp_path_factory.mktemp("tiny-models"))
