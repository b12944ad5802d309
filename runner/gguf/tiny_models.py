"""Tiny random-weight GGUF models for tests: one per speculative path, written locally, no downloads.

This module owns the writers behind ``python -m runner fixtures``. All files use llama.cpp's
built-in ``test`` tokenizer (text is hashed into token ids in chunks of five bytes, tokens print
as their id in hex), F32 weights and a fixed numpy seed, so the bytes and hence the sha256 of
every file are the same on each run. Every file carries ``TEST_WEIGHTS_KEY``: its weights are
random, so what it measures never ranks.
"""

from pathlib import Path

import numpy as np
from gguf import GGUFWriter, LlamaFileType

N_VOCAB = 256
N_EMBD = 64
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = 16
N_FF = 128
CONTEXT_LENGTH = 4096
RMS_EPS = 1e-6
ROPE_BASE = 10000.0

TARGET_LAYERS = 4
DFLASH_LAYERS = 2
DFLASH_BLOCK_SIZE = 16
# values are HF target_layer_ids + 1 and must stay below the target's block count
DFLASH_TARGET_LAYERS = [1, 3]
DFLASH_MASK_TOKEN = N_VOCAB - 1
WIDE_N_EMBD = 32
MTP_MAIN_LAYERS = 2

# The project's own GGUF key saying a file holds test weights, so that the service keeps results
# measured with it off the main ranking (llama.cpp ignores keys it does not know).
TEST_WEIGHTS_KEY = "specboard.test_weights"

FIXTURE_NAMES = (
    "tiny-qwen3.gguf",
    "tiny-dflash.gguf",
    "tiny-dflash-draft-premerge.gguf",
    "tiny-dflash-wide.gguf",
    "tiny-mtp.gguf",
)


def _normal(rng: np.random.Generator, shape: tuple[int, ...], std: float) -> np.ndarray:
    return (rng.standard_normal(shape) * std).astype(np.float32)


def _hparams(
    w: GGUFWriter, arch: str, *, n_embd: int, n_head: int, block_count: int, name: str
) -> None:
    w.add_name(name)
    w.add_bool(TEST_WEIGHTS_KEY, True)
    w.add_file_type(LlamaFileType.ALL_F32)
    w.add_uint32(f"{arch}.context_length", CONTEXT_LENGTH)
    w.add_uint32(f"{arch}.embedding_length", n_embd)
    w.add_uint32(f"{arch}.block_count", block_count)
    w.add_uint32(f"{arch}.feed_forward_length", N_FF)
    w.add_uint32(f"{arch}.attention.head_count", n_head)
    w.add_uint32(f"{arch}.attention.head_count_kv", min(N_HEAD_KV, n_head))
    w.add_uint32(f"{arch}.attention.key_length", HEAD_DIM)
    w.add_uint32(f"{arch}.attention.value_length", HEAD_DIM)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", RMS_EPS)
    w.add_float32(f"{arch}.rope.freq_base", ROPE_BASE)


def _test_tokenizer(w: GGUFWriter, *, mask_token: int | None = None) -> None:
    w.add_string("tokenizer.ggml.model", "test")
    # the loader needs a token list with unique texts; scores and types are optional
    w.add_array("tokenizer.ggml.tokens", [f"<t{i:02x}>" for i in range(N_VOCAB)])
    w.add_array("tokenizer.ggml.scores", [0.0] * N_VOCAB)
    w.add_array("tokenizer.ggml.token_type", [1] * N_VOCAB)
    if mask_token is not None:
        w.add_uint32("tokenizer.ggml.mask_token_id", mask_token)


def _block(
    rng: np.random.Generator, i: int, *, n_embd: int, n_head: int, out_std: float | None = None
) -> dict[str, np.ndarray]:
    """Tensors of one dense attention + SwiGLU block, numpy shapes (out, in)."""
    n_q, n_kv = n_head * HEAD_DIM, min(N_HEAD_KV, n_head) * HEAD_DIM
    out_std_attn = out_std if out_std is not None else 1 / np.sqrt(n_q)
    out_std_ffn = out_std if out_std is not None else 1 / np.sqrt(N_FF)
    ones = np.ones
    return {
        f"blk.{i}.attn_norm.weight": ones(n_embd, np.float32),
        f"blk.{i}.attn_q.weight": _normal(rng, (n_q, n_embd), 1 / np.sqrt(n_embd)),
        f"blk.{i}.attn_k.weight": _normal(rng, (n_kv, n_embd), 1 / np.sqrt(n_embd)),
        f"blk.{i}.attn_v.weight": _normal(rng, (n_kv, n_embd), 1 / np.sqrt(n_embd)),
        f"blk.{i}.attn_output.weight": _normal(rng, (n_embd, n_q), out_std_attn),
        f"blk.{i}.attn_q_norm.weight": ones(HEAD_DIM, np.float32),
        f"blk.{i}.attn_k_norm.weight": ones(HEAD_DIM, np.float32),
        f"blk.{i}.ffn_norm.weight": ones(n_embd, np.float32),
        f"blk.{i}.ffn_gate.weight": _normal(rng, (N_FF, n_embd), 1 / np.sqrt(n_embd)),
        f"blk.{i}.ffn_up.weight": _normal(rng, (N_FF, n_embd), 1 / np.sqrt(n_embd)),
        f"blk.{i}.ffn_down.weight": _normal(rng, (n_embd, N_FF), out_std_ffn),
    }


def _write(path: Path, w: GGUFWriter, tensors: dict[str, np.ndarray]) -> Path:
    for name, array in tensors.items():
        w.add_tensor(name, array)
    w.write_header_to_file(path)
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_qwen3(path: Path, seed: int = 1) -> Path:
    """Write a random 4-layer qwen3 target (n_embd 64, 256 tokens)."""
    rng = np.random.default_rng(seed)
    w = GGUFWriter(path, "qwen3")
    _hparams(w, "qwen3", n_embd=N_EMBD, n_head=N_HEAD, block_count=TARGET_LAYERS, name="tiny-qwen3")
    _test_tokenizer(w)
    tensors = {
        "token_embd.weight": _normal(rng, (N_VOCAB, N_EMBD), 1.0),
        "output_norm.weight": np.ones(N_EMBD, np.float32),
        # an untied random head keeps greedy output from just echoing the input token
        "output.weight": _normal(rng, (N_VOCAB, N_EMBD), 1 / np.sqrt(N_EMBD)),
    }
    for i in range(TARGET_LAYERS):
        tensors |= _block(rng, i, n_embd=N_EMBD, n_head=N_HEAD)
    return _write(path, w, tensors)


def write_dflash(
    path: Path,
    *,
    arch: str = "dflash",
    n_embd: int = N_EMBD,
    seed: int = 2,
    name: str = "tiny-dflash",
) -> Path:
    """Write a random 2-layer DFlash draft; token_embd and output are borrowed from the target."""
    rng = np.random.default_rng(seed)
    n_head = n_embd // HEAD_DIM
    w = GGUFWriter(path, arch)
    _hparams(w, arch, n_embd=n_embd, n_head=n_head, block_count=DFLASH_LAYERS, name=name)
    w.add_uint32(f"{arch}.block_size", DFLASH_BLOCK_SIZE)
    w.add_array(f"{arch}.target_layers", DFLASH_TARGET_LAYERS)
    _test_tokenizer(w, mask_token=DFLASH_MASK_TOKEN)
    n_in = len(DFLASH_TARGET_LAYERS) * n_embd
    tensors = {
        "fc.weight": _normal(rng, (n_embd, n_in), 1 / np.sqrt(n_in)),
        "enc.output_norm.weight": np.ones(n_embd, np.float32),
        "output_norm.weight": np.ones(n_embd, np.float32),
    }
    for i in range(DFLASH_LAYERS):
        tensors |= _block(rng, i, n_embd=n_embd, n_head=n_head)
    return _write(path, w, tensors)


def _shifted_embedding(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Token embedding with rows of RMS 1, and a head whose row t+1 is embedding row t."""
    embd = _normal(rng, (N_VOCAB, N_EMBD), 1.0)
    embd *= np.sqrt(N_EMBD) / np.linalg.norm(embd, axis=1, keepdims=True)
    head = np.roll(embd, 1, axis=0)
    # the construction only works if every token's nearest head row is its successor
    logits = embd @ head.T
    assert (logits.argmax(axis=1) == (np.arange(N_VOCAB) + 1) % N_VOCAB).all()
    return embd, head


def write_mtp(path: Path, seed: int = 3) -> Path:
    """Write a dense hy_v3 target with an MTP head where both predict "current token + 1"."""
    rng = np.random.default_rng(seed)
    arch = "hy_v3"
    w = GGUFWriter(path, arch)
    _hparams(
        w, arch, n_embd=N_EMBD, n_head=N_HEAD, block_count=MTP_MAIN_LAYERS + 1, name="tiny-mtp"
    )
    w.add_uint32(f"{arch}.nextn_predict_layers", 1)
    # required by the loader, unused without experts
    w.add_uint32(f"{arch}.expert_feed_forward_length", N_FF)
    _test_tokenizer(w)
    embd, head = _shifted_embedding(rng)
    tensors = {
        "token_embd.weight": embd,
        "output_norm.weight": np.ones(N_EMBD, np.float32),
        "output.weight": head,
    }
    # small block outputs keep the residual stream close to the input token's embedding
    for i in range(MTP_MAIN_LAYERS + 1):
        tensors |= _block(rng, i, n_embd=N_EMBD, n_head=N_HEAD, out_std=0.002)
    mtp = MTP_MAIN_LAYERS
    eh_proj = np.zeros((N_EMBD, 2 * N_EMBD), np.float32)
    # the token half comes first: pass the token's embedding on and ignore the hidden state
    eh_proj[:, :N_EMBD] = np.eye(N_EMBD, dtype=np.float32)
    tensors |= {
        f"blk.{mtp}.nextn.eh_proj.weight": eh_proj,
        f"blk.{mtp}.nextn.enorm.weight": np.ones(N_EMBD, np.float32),
        f"blk.{mtp}.nextn.hnorm.weight": np.ones(N_EMBD, np.float32),
        f"blk.{mtp}.nextn.shared_head_norm.weight": np.ones(N_EMBD, np.float32),
    }
    return _write(path, w, tensors)


def write_fixtures(directory: Path) -> dict[str, Path]:
    """Write every tiny fixture model into directory and return them by file name."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [
        write_qwen3(directory / "tiny-qwen3.gguf"),
        write_dflash(directory / "tiny-dflash.gguf"),
        write_dflash(
            directory / "tiny-dflash-draft-premerge.gguf",
            arch="dflash-draft",
            name="tiny-dflash-draft-premerge",
        ),
        write_dflash(
            directory / "tiny-dflash-wide.gguf", n_embd=WIDE_N_EMBD, name="tiny-dflash-wide"
        ),
        write_mtp(directory / "tiny-mtp.gguf"),
    ]
    return {p.name: p for p in paths}
