"""A minimal GGUF file written on the spot, for the registration tests: it looks like a real
model unless its tokenizer or the test-weights mark says not."""

from __future__ import annotations

from pathlib import Path

from gguf import GGUFWriter
from numpy import zeros

from runner.gguf.tiny_models import TEST_WEIGHTS_KEY


def write_gguf(path: Path, *, tokenizer: str, marked: bool = False) -> Path:
    """A minimal GGUF file that looks like a real model unless its tokenizer or mark says not."""
    writer = GGUFWriter(path, "qwen3")
    writer.add_name(path.stem)
    if marked:
        writer.add_bool(TEST_WEIGHTS_KEY, True)
    writer.add_string("tokenizer.ggml.model", tokenizer)
    writer.add_array("tokenizer.ggml.tokens", ["a", "b", "c", "d"])
    writer.add_tensor("token_embd.weight", zeros((4, 8), "float32"))
    writer.write_header_to_file(path)
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
