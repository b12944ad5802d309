"""GGUF files written on the spot, for the registration tests: a minimal one that looks like a
real model unless its tokenizer or the test-weights mark says not, and variants of the tiny
fixtures with keys or tensors changed (a DFlash draft with a bad mask token or fc shape)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter
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


def rewrite_gguf(
    source: Path,
    path: Path,
    *,
    keys: dict[str, tuple[Any, GGUFValueType]] | None = None,
    drop_keys: tuple[str, ...] = (),
    tensors: dict[str, np.ndarray] | None = None,
    drop_tensors: tuple[str, ...] = (),
) -> Path:
    """A copy of an F32 GGUF file with some keys set (value and type) or dropped and some
    tensors replaced (numpy shape, out first) or dropped: a variant of a tiny fixture."""
    reader = GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    writer = GGUFWriter(path, arch)
    for name, found in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture" or name in drop_keys:
            continue
        if keys and name in keys:
            continue
        kind = GGUFValueType(found.types[0])
        sub = GGUFValueType(found.types[-1]) if kind == GGUFValueType.ARRAY else None
        writer.add_key_value(name, found.contents(), kind, sub)
    for name, (value, kind) in (keys or {}).items():
        sub = None
        if kind == GGUFValueType.ARRAY:
            sub = GGUFValueType.STRING if isinstance(value[0], str) else GGUFValueType.INT32
        writer.add_key_value(name, value, kind, sub)
    replaced = tensors or {}
    for tensor in reader.tensors:
        if tensor.name in drop_tensors or tensor.name in replaced:
            continue
        writer.add_tensor(tensor.name, np.array(tensor.data))
    for name, array in replaced.items():
        writer.add_tensor(name, array.astype(np.float32))
    writer.write_header_to_file(path)
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
