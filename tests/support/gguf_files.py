"""GGUF files written on the spot, for the registration tests: a minimal one that looks like a
real model unless its tokenizer or the test-weights mark says not, and variants of the tiny
fixtures with keys or tensors changed (a DFlash draft with a bad mask token or fc shape)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter
from numpy import zeros

from runner.gguf.tiny_models import (
    DFLASH_LAYERS,
    N_EMBD,
    N_VOCAB,
    TARGET_LAYERS,
    TEST_WEIGHTS_KEY,
)


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


def _dflash_edits() -> dict[str, dict[str, Any]]:
    uint32, array = GGUFValueType.UINT32, GGUFValueType.ARRAY
    other_tokens = [f"<u{i:02x}>" for i in range(N_VOCAB)]
    # llama.cpp compares token texts from id 5 on: these differ only before it.
    specials_differ = [f"<s{i}>" if i < 5 else f"<t{i:02x}>" for i in range(N_VOCAB)]
    return {
        "mask-out-of-range": {"keys": {"tokenizer.ggml.mask_token_id": (N_VOCAB, uint32)}},
        "no-mask": {"drop_keys": ("tokenizer.ggml.mask_token_id",)},
        "block-size-1": {"keys": {"dflash.block_size": (1, uint32)}},
        "fc-one-layer-wide": {"tensors": {"fc.weight": np.zeros((N_EMBD, N_EMBD))}},
        "no-ffn-down": {"drop_tensors": (f"blk.{DFLASH_LAYERS - 1}.ffn_down.weight",)},
        "no-enc-norm": {"drop_tensors": ("enc.output_norm.weight",)},
        "blocks-beyond-tensors": {"keys": {"dflash.block_count": (DFLASH_LAYERS + 1, uint32)}},
        "blocks-beyond-llama-cpp": {"keys": {"dflash.block_count": (10**9, uint32)}},
        "ffn-widths-disagree": {"tensors": {"blk.0.ffn_down.weight": np.zeros((N_EMBD, 96))}},
        "no-attn-v": {
            "drop_tensors": tuple(f"blk.{i}.attn_v.weight" for i in range(DFLASH_LAYERS))
        },
        "other-tokens": {"keys": {"tokenizer.ggml.tokens": (other_tokens, array)}},
        "specials-differ": {"keys": {"tokenizer.ggml.tokens": (specials_differ, array)}},
        # Keys of the wrong type: llama.cpp reads them as whole numbers.
        "mask-not-a-number": {
            "keys": {"tokenizer.ggml.mask_token_id": ("<mask>", GGUFValueType.STRING)}
        },
        "layers-not-numbers": {"keys": {"dflash.target_layers": (["1", "3"], array)}},
        # Right for the draft alone, but the tiny target has only 4 layers.
        "layer-beyond-target": {"keys": {"dflash.target_layers": ([1, TARGET_LAYERS], array)}},
    }


def write_dflash_variants(draft: Path, folder: Path) -> dict[str, Path]:
    """Variants of the tiny DFlash draft, each with one thing changed, by that thing's name
    (`<name>.gguf` in folder): the ones the draft checks must refuse, and two they must not
    (no-attn-v, specials-differ)."""
    return {
        name: rewrite_gguf(draft, folder / f"{name}.gguf", **edit)
        for name, edit in _dflash_edits().items()
    }
