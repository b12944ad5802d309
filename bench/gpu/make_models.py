"""Write random-weight GGUF models with the real shapes of mid-size and large targets.

Speed does not depend on weight values, so a model with a real architecture, real tensor shapes
and a real quantized type decodes exactly as fast as the trained one. Blocks are written directly
in the quantized format (random quants, small valid scales), so a 27B target costs only the time
to write its bytes. Greedy output of these models is meaningless: DFlash runs on them use the
engine's synthetic acceptance and are labelled synthetic.

    python bench/gpu/make_models.py DIR --shape qwen3-8b --shape qwen3-27b
    python bench/gpu/make_models.py DIR --shape tiny     # seconds, for checking this script on CPU
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFWriter, LlamaFileType

Q = GGMLQuantizationType


@dataclass(frozen=True)
class Shape:
    name: str
    n_vocab: int
    n_embd: int
    n_layers: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ff: int
    context_length: int
    draft_layers: int
    draft_ff: int
    draft_target_layers: tuple[int, ...]


SHAPES = {
    # Qwen3-8B's published shapes.
    "qwen3-8b": Shape(
        "qwen3-8b", 151936, 4096, 36, 32, 8, 128, 12288, 40960, 5, 12288, (2, 10, 18, 26, 34)
    ),
    # A dense qwen3-architecture target of about 27.9B parameters (Qwen3-32B's width, 54 layers):
    # the seed's size class. Its draft is about 1.8B parameters, as the seed's 1.9 GB Q8_0 draft.
    "qwen3-27b": Shape(
        "qwen3-27b", 151936, 5120, 54, 64, 8, 128, 25600, 40960, 5, 17408, (2, 14, 27, 40, 53)
    ),
    # Qwen3-0.6B's shapes: small enough to decode on a 2-core CPU, real vocabulary and depth.
    "qwen3-0.6b": Shape("qwen3-0.6b", 151936, 1024, 28, 16, 8, 128, 3072, 40960, 2, 3072, (2, 27)),
    "tiny": Shape("tiny", 512, 256, 4, 4, 2, 64, 512, 8192, 2, 512, (1, 3)),
}


def _scale_bytes(value: float) -> np.ndarray:
    return np.array([value], dtype=np.float16).view(np.uint8)


# Offsets of the fp16 scale fields inside one block of each quantized type (ggml-common.h).
_SCALE_FIELDS = {
    Q.Q4_K: ((0, 0.002), (2, 0.001)),  # d, dmin
    Q.Q6_K: ((208, 0.002),),  # d at the end
    Q.Q8_0: ((0, 0.002),),
}


class BlockPool:
    """A few MB of valid random blocks per type, repeated to fill any tensor."""

    def __init__(self, seed: int, blocks: int = 65536) -> None:
        rng = np.random.default_rng(seed)
        self.pools = {}
        for qtype, fields in _SCALE_FIELDS.items():
            _, type_size = GGML_QUANT_SIZES[qtype]
            pool = rng.integers(0, 256, size=(blocks, type_size), dtype=np.uint8)
            if qtype == Q.Q4_K:
                pool[:, 4:16] &= 0x3F  # keep the 6-bit sub-block scales small
            for offset, value in fields:
                pool[:, offset : offset + 2] = _scale_bytes(value)
            self.pools[qtype] = pool

    def tensor(self, rows: int, cols: int, qtype: GGMLQuantizationType) -> np.ndarray:
        block_size, type_size = GGML_QUANT_SIZES[qtype]
        per_row = cols // block_size
        pool = self.pools[qtype]
        needed = rows * per_row
        reps = -(-needed // len(pool))
        data = np.tile(pool, (reps, 1))[:needed] if reps > 1 else pool[:needed]
        return data.reshape(rows, per_row * type_size)


def _hparams(w: GGUFWriter, arch: str, shape: Shape, *, layers: int, ff: int, name: str) -> None:
    w.add_name(name)
    w.add_uint32(f"{arch}.context_length", shape.context_length)
    w.add_uint32(f"{arch}.embedding_length", shape.n_embd)
    w.add_uint32(f"{arch}.block_count", layers)
    w.add_uint32(f"{arch}.feed_forward_length", ff)
    w.add_uint32(f"{arch}.attention.head_count", shape.n_head)
    w.add_uint32(f"{arch}.attention.head_count_kv", shape.n_head_kv)
    w.add_uint32(f"{arch}.attention.key_length", shape.head_dim)
    w.add_uint32(f"{arch}.attention.value_length", shape.head_dim)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_float32(f"{arch}.rope.freq_base", 1_000_000.0)


def _tokenizer(w: GGUFWriter, shape: Shape, *, mask: bool) -> None:
    w.add_string("tokenizer.ggml.model", "test")
    w.add_array("tokenizer.ggml.tokens", [f"<t{i:05x}>" for i in range(shape.n_vocab)])
    if mask:
        w.add_uint32("tokenizer.ggml.mask_token_id", shape.n_vocab - 1)


def _block_tensors(shape: Shape, i: int, *, ff: int, qtype) -> list[tuple[str, int, int, object]]:
    """(name, rows, cols, type) of one attention + SwiGLU block; rows are output features."""
    n_q, n_kv, e = shape.n_head * shape.head_dim, shape.n_head_kv * shape.head_dim, shape.n_embd
    down_type = Q.Q6_K if qtype == Q.Q4_K and i % 2 == 0 else qtype  # Q4_K_M's mix, roughly
    return [
        (f"blk.{i}.attn_norm.weight", 1, e, None),
        (f"blk.{i}.attn_q.weight", n_q, e, qtype),
        (f"blk.{i}.attn_k.weight", n_kv, e, qtype),
        (f"blk.{i}.attn_v.weight", n_kv, e, Q.Q6_K if qtype == Q.Q4_K else qtype),
        (f"blk.{i}.attn_output.weight", e, n_q, qtype),
        (f"blk.{i}.attn_q_norm.weight", 1, shape.head_dim, None),
        (f"blk.{i}.attn_k_norm.weight", 1, shape.head_dim, None),
        (f"blk.{i}.ffn_norm.weight", 1, e, None),
        (f"blk.{i}.ffn_gate.weight", ff, e, qtype),
        (f"blk.{i}.ffn_up.weight", ff, e, qtype),
        (f"blk.{i}.ffn_down.weight", e, ff, down_type),
    ]


def _write(path: Path, w: GGUFWriter, specs, pool: BlockPool) -> Path:
    for name, rows, cols, qtype in specs:
        if qtype is None:
            w.add_tensor_info(
                name, [cols] if rows == 1 else [rows, cols], np.dtype(np.float32), rows * cols * 4
            )
        else:
            block_size, type_size = GGML_QUANT_SIZES[qtype]
            nbytes = rows * cols // block_size * type_size
            w.add_tensor_info(
                name,
                [rows, cols // block_size * type_size],
                np.dtype(np.uint8),
                nbytes,
                raw_dtype=qtype,
            )
    w.write_header_to_file(path)
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for _name, rows, cols, qtype in specs:
        if qtype is None:
            w.write_tensor_data(np.ones(cols if rows == 1 else (rows, cols), np.float32))
        else:
            w.write_tensor_data(pool.tensor(rows, cols, qtype))
    w.close()
    return path


def write_target(path: Path, shape: Shape, pool: BlockPool) -> Path:
    """A qwen3 target in a Q4_K_M-like mix (Q4_K, with Q6_K for the head and some tensors)."""
    w = GGUFWriter(path, "qwen3")
    _hparams(w, "qwen3", shape, layers=shape.n_layers, ff=shape.n_ff, name=f"{shape.name}-random")
    w.add_file_type(LlamaFileType.MOSTLY_Q4_K_M)
    _tokenizer(w, shape, mask=False)
    specs = [
        ("token_embd.weight", shape.n_vocab, shape.n_embd, Q.Q4_K),
        ("output_norm.weight", 1, shape.n_embd, None),
        ("output.weight", shape.n_vocab, shape.n_embd, Q.Q6_K),
    ]
    for i in range(shape.n_layers):
        specs += _block_tensors(shape, i, ff=shape.n_ff, qtype=Q.Q4_K)
    return _write(path, w, specs, pool)


def write_dflash_draft(path: Path, shape: Shape, pool: BlockPool) -> Path:
    """A DFlash draft of matching width in Q8_0; embeddings and head are borrowed from the target."""
    arch = "dflash"
    w = GGUFWriter(path, arch)
    _hparams(
        w,
        arch,
        shape,
        layers=shape.draft_layers,
        ff=shape.draft_ff,
        name=f"{shape.name}-dflash-random",
    )
    w.add_file_type(LlamaFileType.MOSTLY_Q8_0)
    w.add_uint32(f"{arch}.block_size", 16)
    w.add_array(f"{arch}.target_layers", list(shape.draft_target_layers))
    _tokenizer(w, shape, mask=True)
    fc_in = len(shape.draft_target_layers) * shape.n_embd
    specs = [
        ("fc.weight", shape.n_embd, fc_in, Q.Q8_0),
        ("enc.output_norm.weight", 1, shape.n_embd, None),
        ("output_norm.weight", 1, shape.n_embd, None),
    ]
    for i in range(shape.draft_layers):
        specs += _block_tensors(shape, i, ff=shape.draft_ff, qtype=Q.Q8_0)
    return _write(path, w, specs, pool)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES), required=True)
    args = parser.parse_args()
    args.directory.mkdir(parents=True, exist_ok=True)
    pool = BlockPool(seed=7)
    for name in args.shape:
        shape = SHAPES[name]
        for writer, suffix in ((write_target, "Q4_K_M"), (write_dflash_draft, "dflash-Q8_0")):
            started = time.monotonic()
            path = writer(args.directory / f"{name}-random-{suffix}.gguf", shape, pool)
            size = path.stat().st_size / 1e9
            print(f"{path.name}: {size:.2f} GB in {time.monotonic() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()
