"""Can llama-server run this config with this target and draft? The one set of pair checks.

This module owns every check that needs both a config and the models' GGUF metadata: the
speculative type against the target and draft (MTP head, DFlash architecture, target layers,
hidden size, vocabulary size and token texts, mask token), a DFlash draft's n_max limit, and the
context against the target's training context; and the memory estimate, per GPU for a split
over several (``memory_problems``, ``gpu_placement_problems``). ``pair_problems`` returns them
keyed by the config field they are about, for the service's forms and API (which build
``ModelInfo`` from registered metadata, no file access); ``check_pair`` raises them as one
``ModelCheckError`` line, for the runner before it starts a server. ``dflash_draft_problem`` is
the part that needs no target (a DFlash draft's keys and tensors, as llama.cpp b11434 loads
them), which the registry also runs when a draft is registered. Every message is a whole
sentence that names the GGUF field, readable beside its field or on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from runner.config import BenchmarkConfig, FieldMessage
from runner.errors import ModelCheckError
from runner.gguf.inspect import ModelInfo

DEFAULT_DFLASH_BLOCK_SIZE = 16
# llama.cpp accepts a draft whose vocabulary differs by up to this many tokens (Qwen2.5 family)
SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128
DRAFT_MODEL_SPEC_TYPES = frozenset({"draft-simple", "draft-eagle3", "draft-dflash", "draft-dspark"})
DFLASH_SPEC_TYPES = frozenset({"draft-dflash", "draft-dspark"})


# The kind of refusal a context above the target's training context is (`FieldMessage`).
TRAINING_CONTEXT = "training_context"


def max_dflash_n_max(draft: ModelInfo) -> int:
    """Largest useful --spec-draft-n-max for a DFlash draft: its block size minus one."""
    return (draft.dflash_block_size or DEFAULT_DFLASH_BLOCK_SIZE) - 1


def pair_problems(
    config: BenchmarkConfig, target: ModelInfo, draft: ModelInfo | None
) -> dict[str, list[str]]:
    """Why llama-server cannot run config with these models, by config field; empty if it can.

    Keys: ``draft_model`` (or ``spec_types`` when there is no draft) for the pair itself,
    ``n_max`` for a DFlash draft's limit, ``ctx_size`` for the target's training context.
    """
    problems: dict[str, list[str]] = {}
    pair = speculative_pair_problem(target=target, draft=draft, spec_types=config.spec_types)
    if pair is not None:
        problems["draft_model" if draft is not None else "spec_types"] = [pair]
    if "draft-dflash" in config.spec_types and draft is not None and config.n_max is not None:
        limit = max_dflash_n_max(draft)
        if config.n_max > limit:
            problems["n_max"] = [
                f"n_max {config.n_max} is above this DFlash draft's limit of {limit} "
                "(its block size minus one)"
            ]
    # llama-server splits its context across its slots: each request sees one slot's share.
    per_slot = config.effective_ctx_size // config.slots
    if target.context_length and per_slot > target.context_length:
        problems["ctx_size"] = [
            FieldMessage(
                f"context {per_slot}{' per slot' if config.slots > 1 else ''} is above the "
                f"target's training context of {target.context_length} tokens",
                TRAINING_CONTEXT,
                {"needed": per_slot, "per_slot": config.slots > 1, "limit": target.context_length},
            )
        ]
    return problems


# Bytes per K/V cache element by llama.cpp cache type (quantized blocks of 32 with their scales).
CACHE_TYPE_BYTES = {
    "f32": 4.0,
    "f16": 2.0,
    "bf16": 2.0,
    "q8_0": 34 / 32,
    "q4_0": 18 / 32,
    "q4_1": 20 / 32,
    "iq4_nl": 18 / 32,
    "q5_0": 22 / 32,
    "q5_1": 24 / 32,
}
GIB = 1024**3


def estimated_memory_bytes(
    config: BenchmarkConfig, target: ModelInfo, draft: ModelInfo | None
) -> int | None:
    """The least memory the engine needs: the weights and the K/V cache for the config's whole
    context (every slot's); compute buffers come on top. None where a model's K/V size is unknown."""
    models = _known_models(target, draft)
    if models is None:
        return None
    per_token = sum(
        kv_bytes_per_token(
            m.kv_elements_per_token or 0,
            cache_type_k=config.cache_type_k,
            cache_type_v=config.cache_type_v,
        )
        for m in models
    )
    return int(sum(m.size_bytes for m in models) + per_token * config.effective_ctx_size)


def _known_models(target: ModelInfo, draft: ModelInfo | None) -> list[ModelInfo] | None:
    """The target and any draft; None where a model's K/V size is unknown."""
    models = [m for m in (target, draft) if m is not None]
    if any(m.kv_elements_per_token is None for m in models):
        return None
    return models


def kv_bytes_per_token(
    kv_elements_per_token: int, *, cache_type_k: str, cache_type_v: str
) -> float:
    """Bytes one token of context takes in a model's K/V cache: its K and V elements (as many
    of each, ``ModelInfo.kv_elements_per_token`` counts both) at the cache types' sizes. The
    memory estimate and ``runner.roofline`` (the cache a decoding step reads) both use it."""
    per_element = (CACHE_TYPE_BYTES[cache_type_k] + CACHE_TYPE_BYTES[cache_type_v]) / 2
    return kv_elements_per_token * per_element


def _size(count: float) -> str:
    return f"{count / GIB:.1f} GiB" if count >= GIB else f"{count / 1024**2:.1f} MiB"


def gpu_placement_problems(config: BenchmarkConfig, *, gpu_count: int) -> dict[str, list[str]]:
    """Where the config's multi-GPU options name a GPU the hardware does not have, by field."""
    problems: dict[str, list[str]] = {}
    have = f"this hardware has {gpu_count} GPU{'s' if gpu_count != 1 else ''}"
    if config.tensor_split is not None and len(config.tensor_split) > gpu_count:
        problems["tensor_split"] = [
            f"the split gives proportions for {len(config.tensor_split)} GPUs, but {have}"
        ]
    if config.main_gpu >= gpu_count:
        problems["main_gpu"] = [f"GPU {config.main_gpu} does not exist: {have} (0 is the first)"]
    if config.draft_gpu is not None and config.draft_gpu >= gpu_count:
        problems["draft_gpu"] = [f"GPU {config.draft_gpu} does not exist: {have} (0 is the first)"]
    return problems


def _shares(config: BenchmarkConfig, gpu_memory: Sequence[int]) -> tuple[list[float], int]:
    """Each GPU's share of the target's weights, and the GPU its K/V cache sits on (-1: the
    cache follows the weights). llama.cpp b11434: split_mode none puts everything on the main
    GPU; a layer split gives each GPU its layers and their cache by the tensor split, else in
    proportion to each GPU's free memory (its total memory here); a row split divides the
    weight matrices by the tensor split and keeps the cache and intermediate results on the
    main GPU."""
    count = len(gpu_memory)
    if config.split_mode == "none" or count == 1:
        shares = [0.0] * count
        shares[min(config.main_gpu, count - 1)] = 1.0
        return shares, -1
    weights = list(config.tensor_split or gpu_memory)[:count]
    weights += [0.0] * (count - len(weights))
    total = sum(weights)
    shares = [part / total for part in weights] if total > 0 else [1.0 / count] * count
    return shares, (config.main_gpu if config.split_mode == "row" else -1)


def _placed(size: float, cache: float, shares: list[float], cache_gpu: int) -> list[float]:
    if cache_gpu < 0:
        return [(size + cache) * share for share in shares]
    placed = [size * share for share in shares]
    placed[cache_gpu] += cache
    return placed


def estimated_memory_per_gpu(
    config: BenchmarkConfig,
    target: ModelInfo,
    draft: ModelInfo | None,
    *,
    gpu_memory: Sequence[int],
) -> list[int] | None:
    """The least memory each GPU needs for the config's split (its share of the weights and of
    the K/V cache, ``_shares``); a draft placed on a GPU of its own (draft_gpu) is wholly there,
    else it follows the target's split, as llama-server's draft does. None where a model's K/V
    size is unknown, or the config names a GPU that is not there."""
    if not gpu_memory or gpu_placement_problems(config, gpu_count=len(gpu_memory)):
        return None
    models = _known_models(target, draft)
    if models is None:
        return None
    shares, cache_gpu = _shares(config, gpu_memory)
    needed = [0.0] * len(gpu_memory)
    for model in models:
        cache = config.effective_ctx_size * kv_bytes_per_token(
            model.kv_elements_per_token or 0,
            cache_type_k=config.cache_type_k,
            cache_type_v=config.cache_type_v,
        )
        own_gpu = config.draft_gpu if model is draft else None
        placed = _model_placed(model.size_bytes, cache, shares, cache_gpu, own_gpu=own_gpu)
        for gpu, amount in enumerate(placed):
            needed[gpu] += amount
    return [int(amount) for amount in needed]


def _model_placed(
    size: float, cache: float, shares: list[float], cache_gpu: int, *, own_gpu: int | None
) -> list[float]:
    """Each GPU's part of one model's weights and cache: all of it on a GPU of its own
    (``own_gpu``, the draft's draft_gpu), else the split's (``_placed``)."""
    if own_gpu is None:
        return _placed(size, cache, shares, cache_gpu)
    placed = [0.0] * len(shares)
    placed[own_gpu] += size + cache
    return placed


def memory_problems(
    config: BenchmarkConfig,
    target: ModelInfo,
    draft: ModelInfo | None,
    *,
    memory_bytes: int | None,
    gpu_memory: Sequence[int] | None = None,
) -> dict[str, list[str]]:
    """Whether the config cannot fit in the memory the hardware has (weights and K/V cache),
    keyed by the field that asks for the memory: the concurrency levels, else the context.

    ``gpu_memory`` is each GPU's memory, where the hardware has several or the config places the
    model: then every GPU's share is checked against its own memory (``estimated_memory_per_gpu``),
    keyed by the split's field when the config chose the split, and a GPU the config names that is
    not there is an error of its own (``gpu_placement_problems``)."""
    protocol = config.protocol
    field = (
        f"protocol.{protocol.name}.{protocol.slots_field}" if protocol.slots_field else "ctx_size"
    )
    if gpu_memory and (len(gpu_memory) > 1 or config.uses_gpu_placement):
        return _per_gpu_problems(config, target, draft, gpu_memory=gpu_memory, field=field)
    needed = estimated_memory_bytes(config, target, draft)
    if not memory_bytes or needed is None or needed <= memory_bytes:
        return {}
    return {
        field: [
            f"{config.slots} slot(s) with {config.effective_ctx_size} tokens of context in all "
            f"need at least {_size(needed)} (weights and the K/V cache), above the "
            f"{_size(memory_bytes)} this hardware has"
        ]
    }


def _per_gpu_problems(
    config: BenchmarkConfig,
    target: ModelInfo,
    draft: ModelInfo | None,
    *,
    gpu_memory: Sequence[int],
    field: str,
) -> dict[str, list[str]]:
    if placement := gpu_placement_problems(config, gpu_count=len(gpu_memory)):
        return placement
    needed = estimated_memory_per_gpu(config, target, draft, gpu_memory=gpu_memory)
    if needed is None or all(
        amount <= memory for amount, memory in zip(needed, gpu_memory, strict=True)
    ):
        return {}
    over = [
        f"GPU {gpu} needs at least {_size(amount)} of its {_size(memory)}"
        for gpu, (amount, memory) in enumerate(zip(needed, gpu_memory, strict=True))
        if amount > memory
    ]
    return {
        _split_field(config, default=field): [
            f"{config.slots} slot(s) with {config.effective_ctx_size} tokens of context in all "
            f"do not fit this hardware's GPUs with {_split(config)}: {'; '.join(over)} "
            f"(its share of the weights and the K/V cache)"
        ]
    }


def _split_field(config: BenchmarkConfig, *, default: str) -> str:
    """The field a per-GPU problem is keyed by: the split's, where the config chose one."""
    if config.tensor_split is not None:
        return "tensor_split"
    if config.split_mode != "layer":
        return "split_mode"
    return default


def _split(config: BenchmarkConfig) -> str:
    """The config's split in words: its mode and any tensor split."""
    split = f"split_mode {config.split_mode}"
    if config.tensor_split is not None:
        split += " with tensor split " + ",".join(str(int(p)) for p in config.tensor_split)
    return split


def check_pair(config: BenchmarkConfig, target: ModelInfo, draft: ModelInfo | None) -> None:
    """Raise ModelCheckError, one line, if llama-server cannot run config with these models."""
    problems = pair_problems(config, target, draft)
    if problems:
        raise ModelCheckError("; ".join(m for messages in problems.values() for m in messages))


def speculative_pair_problem(
    *, target: ModelInfo, draft: ModelInfo | None, spec_types: list[str]
) -> str | None:
    """The first reason these speculative types cannot run on this target and draft, or None."""
    types = set(spec_types)
    if "draft-mtp" in types and not target.nextn_predict_layers:
        return (
            f"draft-mtp needs a target with an MTP head, but {target.path} "
            f"({target.architecture}) has no nextn_predict_layers"
        )
    needs_draft = sorted(types & DRAFT_MODEL_SPEC_TYPES)
    if needs_draft and draft is None:
        return f"{needs_draft[0]} needs a draft model (-md), but none was given"
    if draft is None:
        return None
    if draft.architecture == "dflash-draft":
        return (
            f"{draft.path} is a pre-merge DFlash file (architecture dflash-draft) that llama.cpp "
            "cannot load; use a draft converted with architecture 'dflash'"
        )
    if types & DFLASH_SPEC_TYPES:
        return _dflash_problem(target, draft)
    if needs_draft:
        return _vocab_problem(target, draft, exact=False)
    return None


def _dflash_problem(target: ModelInfo, draft: ModelInfo) -> str | None:
    if draft.architecture != "dflash":
        return (
            f"draft-dflash needs a draft with general.architecture 'dflash', but {draft.path} "
            f"is '{draft.architecture}'"
        )
    if problem := dflash_draft_problem(draft):
        return problem
    if problem := _target_layers_problem(target, draft):
        return problem
    if draft.n_embd != target.n_embd:
        return (
            f"DFlash draft {draft.path} has n_embd {draft.n_embd} but target {target.path} "
            f"has {target.n_embd}: its width (dflash.embedding_length) must be the target's, "
            "so the draft must be trained for this target"
        )
    if (problem := _vocab_problem(target, draft, exact=True)) is not None:
        return problem
    return _mask_token_problem(target, draft)


def _target_layers_problem(target: ModelInfo, draft: ModelInfo) -> str | None:
    """Whether the DFlash draft reads a target layer the target does not have."""
    n_layers = target.main_layers
    if n_layers is None or not draft.dflash_target_layers:
        return None
    bad = [layer for layer in draft.dflash_target_layers if not 0 <= layer < n_layers]
    if not bad:
        return None
    return (
        f"DFlash draft {draft.path} reads target layers {draft.dflash_target_layers} "
        f"(dflash.target_layers), but target {target.path} has only {n_layers} layers "
        f"(layer {bad[0]} is out of range)"
    )


def _mask_token_problem(target: ModelInfo, draft: ModelInfo) -> str | None:
    """Whether the DFlash draft's mask token lies outside the target's vocabulary."""
    mask = draft.mask_token_id
    if mask is not None and target.vocab_size is not None and mask >= target.vocab_size:
        return (
            f"DFlash draft {draft.path} has tokenizer.ggml.mask_token_id {mask}, outside target "
            f"{target.path}'s vocabulary of {target.vocab_size} tokens"
        )
    return None


def dflash_draft_problem(draft: ModelInfo) -> str | None:
    """The first reason a DFlash draft cannot load in llama.cpp whatever its target: its keys
    (dflash.target_layers, dflash.block_size, tokenizer.ggml.mask_token_id) and its tensors'
    names and shapes; None if there is none. Metadata recorded before the tensor table was
    (``ModelInfo.tensor_shapes`` None) is checked for its keys only: the runner reads the file
    itself before it starts a server."""
    if not draft.dflash_target_layers:
        return f"DFlash draft {draft.path} has no dflash.target_layers key"
    block = draft.dflash_block_size
    if block is not None and block < 2:
        return (
            f"DFlash draft {draft.path} has dflash.block_size {block}: a block holds the last "
            "token and at least one mask token, so it must be 2 or more"
        )
    if draft.tensor_shapes is None:
        return None
    mask, vocab = draft.mask_token_id, draft.vocab_size
    if mask is None:
        return (
            f"DFlash draft {draft.path} has no tokenizer.ggml.mask_token_id key: llama.cpp "
            "fills the block after the last token with that token"
        )
    if vocab is not None and not 0 <= mask < vocab:
        return (
            f"DFlash draft {draft.path} has tokenizer.ggml.mask_token_id {mask}, outside its "
            f"vocabulary of {vocab} tokens (ids 0 to {vocab - 1})"
        )
    return _dflash_tensor_problem(draft, draft.tensor_shapes)


def _tensor_shape_problem(
    draft: ModelInfo, shapes: dict[str, list[int]], expected: dict[str, tuple[int | None, ...]]
) -> str | None:
    """The first of these tensors that is missing or of another shape, in one sentence."""
    for name, want in expected.items():
        have = shapes.get(name)
        if have is None:
            return f"DFlash draft {draft.path} has no tensor {name}, which llama.cpp loads"
        if len(have) != len(want) or any(
            w not in (None, h) for w, h in zip(want, have, strict=True)
        ):
            why = " (len(dflash.target_layers) x n_embd, n_embd)" if name == "fc.weight" else ""
            return (
                f"DFlash draft {draft.path} has tensor {name} of shape {_dims(have)}, but "
                f"llama.cpp expects {_dims(want)}{why}"
            )
    return None


def _dims(dims: Sequence[int | None]) -> str:
    return "{" + ", ".join("any" if d is None else str(d) for d in dims) + "}"


def _dflash_tensor_problem(draft: ModelInfo, shapes: dict[str, list[int]]) -> str | None:
    """The first tensor llama.cpp would refuse to load: missing, or of another shape than the
    draft's width (dflash.embedding_length) and target layers make it (GGML order, row first)."""
    n_embd, layers, blocks = draft.n_embd, draft.dflash_target_layers or [], draft.block_count
    if n_embd is None or blocks is None:
        missing = "dflash.embedding_length" if n_embd is None else "dflash.block_count"
        return f"DFlash draft {draft.path} has no {missing} key"
    expected: dict[str, tuple[int | None, ...]] = {
        "fc.weight": (len(layers) * n_embd, n_embd),
        "enc.output_norm.weight": (n_embd,),
        "output_norm.weight": (n_embd,),
    }
    # The tensors llama.cpp b11434 loads for every layer (src/models/dflash.cpp), None where
    # any size will do; attn_v is optional there, and checked only where present.
    per_layer: dict[str, tuple[int | None, ...]] = {
        "attn_norm": (n_embd,),
        "attn_q": (n_embd, None),
        "attn_k": (n_embd, None),
        "attn_output": (None, n_embd),
        "attn_q_norm": (None,),
        "attn_k_norm": (None,),
        "ffn_norm": (n_embd,),
        "ffn_gate": (n_embd, None),
        "ffn_up": (n_embd, None),
        "ffn_down": (None, n_embd),
    }
    if problem := _tensor_shape_problem(draft, shapes, expected):
        return problem
    # Layer by layer, so a block count beyond the tensors stops at the first missing one.
    for i in range(blocks):
        names = {f"blk.{i}.{name}.weight": dims for name, dims in per_layer.items()}
        if f"blk.{i}.attn_v.weight" in shapes:
            names[f"blk.{i}.attn_v.weight"] = (n_embd, None)
        if problem := _tensor_shape_problem(draft, shapes, names):
            return problem
    return _layer_widths_problem(draft, shapes, blocks)


# Within a layer the widths must agree: the queries with the attention output, the three
# feed-forward matrices with each other, the two head norms with each other.
AGREEING_WIDTHS = (
    (("attn_q", 1), ("attn_output", 0)),
    (("ffn_gate", 1), ("ffn_up", 1)),
    (("ffn_gate", 1), ("ffn_down", 0)),
    (("attn_q_norm", 0), ("attn_k_norm", 0)),
)


def _layer_widths_problem(
    draft: ModelInfo, shapes: dict[str, list[int]], blocks: int
) -> str | None:
    """The first layer whose tensors' widths disagree (``AGREEING_WIDTHS``), in one sentence."""
    for i in range(blocks):
        for (a, x), (b, y) in AGREEING_WIDTHS:
            first, second = shapes[f"blk.{i}.{a}.weight"][x], shapes[f"blk.{i}.{b}.weight"][y]
            if first != second:
                return (
                    f"DFlash draft {draft.path} has tensors blk.{i}.{a}.weight and "
                    f"blk.{i}.{b}.weight of widths {first} and {second}, which must agree"
                )
    return None


def _vocab_problem(target: ModelInfo, draft: ModelInfo, *, exact: bool) -> str | None:
    if target.vocab_size is None or draft.vocab_size is None:
        return None
    diff = abs(target.vocab_size - draft.vocab_size)
    if diff > (0 if exact else SPEC_VOCAB_MAX_SIZE_DIFFERENCE):
        return (
            f"draft {draft.path} has a vocabulary of {draft.vocab_size} tokens but target "
            f"{target.path} has {target.vocab_size} (tokenizer.ggml.tokens); they must share "
            "a tokenizer"
        )
    # Of the same size, llama.cpp compares the token texts (ModelInfo.vocab_digest).
    if diff == 0 and None not in (target.vocab_digest, draft.vocab_digest):
        if target.vocab_digest != draft.vocab_digest:
            return (
                f"draft {draft.path} has as many tokens as target {target.path} but other "
                "token texts or another tokenizer (tokenizer.ggml.tokens, "
                "tokenizer.ggml.model); they must share a tokenizer"
            )
    return None
