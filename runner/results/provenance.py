"""How a section was measured: the models (``runner.gguf.inspect``), the engine, the host and its
GPUs (``runner.provenance``), the token budget, the exact command and the engine's log tail, and
a paired run's rounds."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from runner.config import MAX_GPUS
from runner.gguf.inspect import MAX_DRAFT_TENSORS
from runner.protocols import MAX_CONCURRENCY
from runner.results.fields import (
    MAX_REQUESTS,
    ByteCount,
    Count,
    GpuIndex,
    LongText,
    Sha256,
    ShortText,
    Text,
    Timestamp,
    TokenTotal,
    _numbered_in_order,
    _Strict,
)


class ModelFileInfo(_Strict):
    """One GGUF file as ``runner.gguf.inspect.ModelInfo.as_dict()`` describes it."""

    path: Text
    sha256: Sha256
    size_bytes: ByteCount
    architecture: ShortText
    file_type: ShortText | Annotated[int, Field(ge=0, le=2**32)] | None = None
    n_embd: Count | None = None
    block_count: Count | None = None
    vocab_size: Count | None = None
    context_length: Count | None = None
    name: Text | None = None
    dflash_target_layers: Annotated[list[Count], Field(max_length=1024)] | None = None
    dflash_block_size: Count | None = None
    nextn_predict_layers: Count | None = None
    # runner.roofline: bytes of weights one generated token reads.
    weight_bytes_per_token: ByteCount | None = None
    # Whether the header marks the file as test weights; absent in results recorded before.
    test_weights: bool | None = None
    # K and V cache elements per token of context (runner.compatibility's memory estimate).
    kv_elements_per_token: Annotated[int, Field(ge=0, le=2**40)] | None = None
    # What runner.compatibility checks a DFlash draft with: its mask token, the vocabulary's
    # digest, and (for a DFlash file) its tensor table; absent in results recorded before.
    mask_token_id: Annotated[int, Field(ge=0, le=2**32)] | None = None
    vocab_digest: Sha256 | None = None
    tensor_shapes: (
        Annotated[
            dict[ShortText, Annotated[list[ByteCount], Field(max_length=4)]],
            Field(max_length=MAX_DRAFT_TENSORS),
        ]
        | None
    ) = None


class ModelPair(_Strict):
    """The target and, where the config has one, the draft model."""

    target: ModelFileInfo
    draft: ModelFileInfo | None


class EngineInfo(_Strict):
    """The engine that measured: ``runner.engines.build.Engine.as_dict()``."""

    server_path: Text
    release: ShortText
    backend: ShortText
    build_flags: Annotated[list[Text], Field(max_length=256)]
    bench_path: Text | None = None
    source: ShortText | None = None


class GpuDevice(_Strict):
    """One GPU the engine could use, as ``runner.provenance.visible_gpus`` reads it from NVML."""

    index: GpuIndex
    name: ShortText
    raw_name: ShortText | None = None
    memory_bytes: ByteCount | None = None


class SystemInfo(_Strict):
    """The host, as ``runner.provenance.system_info`` reads it; every field may be unknown."""

    hostname: ShortText | None = None
    platform: ShortText | None = None
    cpu: ShortText | None = None
    cpu_count: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    memory_bytes: ByteCount | None = None
    python: ShortText | None = None
    packages: Annotated[dict[ShortText, ShortText], Field(max_length=64)] | None = None
    gpu: ShortText | None = None
    gpu_memory_bytes: ByteCount | None = None
    driver: ShortText | None = None
    cuda: ShortText | None = None
    gpu_raw_name: ShortText | None = None
    gpu_count: Annotated[int, Field(ge=0, le=1024)] | None = None
    # runner.roofline.peak_bandwidth of the GPUs the engine uses (NVML); None without NVML.
    gpu_peak_bandwidth_bytes_per_second: ByteCount | None = None
    # Every GPU visible to the engine, in its order; absent in results recorded before.
    gpus: Annotated[list[GpuDevice], Field(max_length=MAX_GPUS)] | None = None

    @field_validator("gpus")
    @classmethod
    def _gpus_in_order(cls, gpus: list[GpuDevice] | None) -> list[GpuDevice] | None:
        _numbered_in_order(gpus)
        return gpus


class TokenBudget(_Strict):
    """``runner.protocols.token_budget``: what the protocol cost, warm-ups included."""

    requests: TokenTotal
    prompt_tokens: TokenTotal
    generated_tokens: TokenTotal
    total_tokens: TokenTotal


class Provenance(_Strict):
    """How a section was measured: the exact command, the models and the engine's log tail."""

    argv: Annotated[list[Text], Field(max_length=500)]
    command: LongText
    models: ModelPair
    engine_log_tail: LongText


class PairedRound(_Strict):
    """One round of a paired run (``runner.schedule``): which side ran first, and the
    measured requests (``requests[].index``, the same in both sections) it measured on both."""

    round: Annotated[int, Field(ge=0, lt=MAX_REQUESTS)]
    # The concurrency protocol's level, whose own sessions the round ran in; None otherwise.
    concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)] | None = None
    order: Annotated[list[Literal["speculative", "baseline"]], Field(min_length=2, max_length=2)]
    request_indices: Annotated[
        list[Annotated[int, Field(ge=0, lt=MAX_REQUESTS)]],
        Field(min_length=1, max_length=MAX_REQUESTS),
    ]

    @field_validator("order")
    @classmethod
    def _both_sides(cls, order: list[str]) -> list[str]:
        if sorted(order) != ["baseline", "speculative"]:
            raise ValueError("must name each side once: speculative and baseline")
        return order


class ResultProvenance(Provenance):
    """The measured config's provenance, with the run's engine, host, times and token budget."""

    engine: EngineInfo
    system: SystemInfo
    started_at: Timestamp
    finished_at: Timestamp
    token_budget: TokenBudget
    # A paired run's rounds in the order they ran; None unpaired, or recorded before rounds.
    paired_rounds: Annotated[list[PairedRound], Field(max_length=MAX_REQUESTS)] | None = None
