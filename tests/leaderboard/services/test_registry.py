"""The registry (services.registry): registering a model file marks it as test weights when its
header says so (the tiny fixtures, any GGUF with the mark or llama.cpp's test tokenizer)."""

from __future__ import annotations

from leaderboard import services
from leaderboard.models import ModelFile
from tests.support.gguf_files import write_gguf


def test_registration_marks_the_tiny_fixtures_and_any_gguf_that_says_test_weights(
    models, settings, tmp_path
):
    assert all(model.test_weights for model in models.values())
    assert ModelFile.objects.filter(test_weights=False).count() == 0

    settings.SPECBOARD_MODELS_DIR = tmp_path
    real = services.register_model(path=write_gguf(tmp_path / "real.gguf", tokenizer="gpt2").name)
    marked = write_gguf(tmp_path / "marked.gguf", tokenizer="gpt2", marked=True)
    old_tiny = write_gguf(tmp_path / "old-tiny.gguf", tokenizer="test")

    assert real.test_weights is False
    assert services.register_model(path=marked.name).test_weights is True
    assert services.register_model(path=old_tiny.name).test_weights is True
    assert ModelFile.objects.get(name="real").test_weights is False
