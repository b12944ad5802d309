"""The memory-bandwidth roofline: how fast decoding could go at most, and how close a run came.

A decoding step reads (nearly) every weight of the model once and the K/V cache of the context,
so a GPU cannot decode faster than its peak memory bandwidth allows for the bytes one step reads.
This module owns the inputs and the verdict:
- ``peak_bandwidth``: the GPU's peak memory bandwidth from NVML (memory bus width and maximum
  memory clock), for the first GPU the engine sees (``runner.energy.gpu_handles``);
- ``weight_bytes_per_token``: the bytes of weights one pass reads, from a GGUF file's tensors
  (``runner.gguf.inspect`` records it as ``ModelInfo.weight_bytes_per_token``);
- ``draft_bytes_per_step``: what drafting adds to a verify step;
- ``section_roofline``: a ceiling for the bytes of one step and the tokens it yields, the measured
  rate's fraction of it and a flag; ``derived_roofline`` fills it from a result's own data.

The bytes of one step (``bytes_per_step``) are the target's weights once, the K/V cache every
stream reads at its context (``runner.compatibility.kv_bytes_per_token`` of the target's
metadata, at the requests' mean context while they decode) and the draft's bytes for that step
(none for n-gram types; one pass of the draft's weights and cache for DFlash, which drafts a
whole block at once; one pass per drafted token for a draft model, which drafts token by token).
Every term is what the step must read at least, so the ceiling is a bound a run cannot pass:
- one stream: ceiling = bandwidth x tokens per step (tau; 1 without drafting) / bytes per step,
  against the section's mean per-request decode tok/s;
- a concurrency level of B requests in flight: one batched step reads the weights once for all B
  and every request's cache, so ceiling = bandwidth x B x tokens per stream per step / bytes per
  step, against the level's aggregate tok/s (the wave's tokens over its wall time).
A term the result cannot give is null, not a guess, and left out (a target's K/V size in results
recorded before models carried it, draft-mtp's head, a draft without its weight bytes): the
ceiling is then higher than the true one and the fraction lower.

Any row above its ceiling is impossible, so it is a measurement error (``above_ceiling``), and a
one-stream baseline on a CUDA engine far below it is most likely running on the CPU
(``far_below``; not for speculative rows, whose drafting may cost more than it yields). CPU hosts
have no roofline at all: null, not a guess. Results written before the step was counted carry the
target-only form (``legacy_roofline``: weights alone, no draft, no cache, the pooled decode mean,
speculative rows unflagged); ``runner.evidence`` checks each form against its own derivation, and
the site shows only the derived one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, Protocol

from runner.config import SELF_DRAFT_TYPES, BenchmarkConfig
from runner.energy import gpu_handles, load_nvml

# Bytes per second = bus width in bits x memory clock in Hz x transfers per clock / 8. NVML
# reports GDDR and HBM memory clocks such that two transfers per reported clock give the
# vendors' figures (H100 SXM: 5120 bits x 2619 MHz x 2 / 8 = 3.35 TB/s), but HBM's reported
# clock convention may differ between generations and drivers; the lead validates this factor
# on the H200 (bench/gpu/energy_probe.py) against its specified 4.8 TB/s.
TRANSFERS_PER_MEMORY_CLOCK = 2
BITS_PER_BYTE = 8
HZ_PER_MHZ = 1_000_000

# A row's rate over its ceiling: above this it is a measurement error (the margin is the
# bandwidth figure's own uncertainty); a baseline below FAR_BELOW_FRACTION a likely CPU fallback.
ABOVE_CEILING_FRACTION = 1.05
FAR_BELOW_FRACTION = 0.05

# Each GPU model's peak memory bandwidth in bytes per second, by its one spelling
# (``runner.provenance.normalise_gpu_name`` of NVML's name), from the vendors' data sheets; the
# H200's is the one NVML's figures give there too (4.814 TB/s, bench/gpu/energy_probe.py). The
# door (``runner.door``) holds a result against its hardware kind's figure, never the file's.
REGISTERED_BANDWIDTH = {
    "H200": 4_800_000_000_000,
    "H200 NVL": 4_800_000_000_000,
    "H100 80GB HBM3": 3_350_000_000_000,
    "H100 NVL": 3_900_000_000_000,
    "H100 PCIe": 2_000_000_000_000,
    "B200": 8_000_000_000_000,
    "A100-SXM4-80GB": 2_039_000_000_000,
    "A100-SXM4-40GB": 1_555_000_000_000,
    "A100 80GB PCIe": 1_935_000_000_000,
    "A100-PCIE-40GB": 1_555_000_000_000,
    "L40S": 864_000_000_000,
    "L4": 300_000_000_000,
    "RTX 5090": 1_792_000_000_000,
    "RTX 4090": 1_008_000_000_000,
    "RTX 3090": 936_000_000_000,
}
# A GPU the register does not know (or a CPU host) is held to the fastest memory any registered
# GPU has: a bound no machine of today passes, so the check is never skipped.
FASTEST_BANDWIDTH = max(REGISTERED_BANDWIDTH.values())

TOKEN_EMBEDDING = "token_embd.weight"
OUTPUT_HEAD = "output.weight"

# The target-only form's figures (``legacy_roofline``), every form's first five.
ROOFLINE_FIGURES = (
    "peak_bandwidth_bytes_per_second",
    "bytes_per_token",
    "ceiling_tokens_per_second",
    "fraction",
    "flag",
)
# What the step form adds: its bytes term by term, the tokens and streams it yields for, the
# context its cache is read at and which rate is held against it; "levels" for concurrency.
STEP_FIGURES = (
    "target_weight_bytes",
    "kv_bytes_per_step",
    "draft_bytes_per_step",
    "bytes_per_step",
    "tokens_per_step",
    "streams",
    "context_tokens",
    "rate",
)

# Drafts that propose a whole block in one pass; drafts that propose token by token, one pass
# each; n-gram types read no weights. draft-mtp runs the target's MTP head, whose bytes a
# result does not record.
BLOCK_DRAFT_TYPES = ("draft-dflash", "draft-dspark")
AUTOREGRESSIVE_DRAFT_TYPES = ("draft-simple", "draft-eagle3")


class Tensor(Protocol):
    """What a tensor table entry tells (``runner.gguf.header.TensorInfo``, or
    ``gguf.GGUFReader``'s tensors): name, size in bytes and GGML shape."""

    @property
    def name(self) -> str: ...

    @property
    def n_bytes(self) -> int: ...

    @property
    def shape(self) -> Any: ...


def bandwidth_from(bus_width_bits: int, max_memory_clock_mhz: int) -> int:
    """Peak memory bandwidth in bytes per second from NVML's two figures."""
    return (
        bus_width_bits * max_memory_clock_mhz * HZ_PER_MHZ * TRANSFERS_PER_MEMORY_CLOCK
    ) // BITS_PER_BYTE


def bandwidth_inputs(
    environ: Mapping[str, str] | None = None, *, nvml: ModuleType | None = None
) -> dict[str, Any] | None:
    """NVML's memory bus width (bits) and maximum memory clock (MHz) of the first GPU the engine
    sees, with its name; None without NVML, a visible GPU or either figure."""
    nvml = nvml or load_nvml()
    if nvml is None:
        return None
    try:
        nvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver or library means no bandwidth, not an error
        return None
    try:
        handles = gpu_handles(nvml, environ)
        if not handles:
            return None
        handle = handles[0]
        bus_width = int(nvml.nvmlDeviceGetMemoryBusWidth(handle))
        clock = int(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM))
        name = nvml.nvmlDeviceGetName(handle)
    except Exception:  # noqa: BLE001 - a GPU that does not report them has no roofline
        return None
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - nothing to release is not an error
            pass
    if bus_width <= 0 or clock <= 0:
        return None
    return {
        "gpu": name.decode() if isinstance(name, bytes) else name,
        "memory_bus_width_bits": bus_width,
        "max_memory_clock_mhz": clock,
    }


def peak_bandwidth(
    environ: Mapping[str, str] | None = None, *, nvml: ModuleType | None = None
) -> int | None:
    """Peak memory bandwidth in bytes per second of the first GPU the engine sees, or None.

    With llama.cpp's default layer split a model on several GPUs runs them one after another
    for each token, so one GPU's bandwidth is the ceiling's, not their sum.
    """
    inputs = bandwidth_inputs(environ, nvml=nvml)
    if inputs is None:
        return None
    return bandwidth_from(inputs["memory_bus_width_bits"], inputs["max_memory_clock_mhz"])


def _block_index(name: str) -> int | None:
    parts = name.split(".")
    if len(parts) > 2 and parts[0] == "blk" and parts[1].isdigit():
        return int(parts[1])
    return None


def weight_bytes_per_token(tensors: Iterable[Tensor], *, main_layers: int | None = None) -> int:
    """Bytes of weights one generated token reads: every tensor once, but of the token-embedding
    table one row (the token's), unless the model has no output head and reuses that table as
    its head (tied embeddings), which reads it whole.

    With main_layers (a model with MTP blocks after its main ones), blocks from that index on are
    not counted: a plain decoding pass does not run them.
    """
    tensors = list(tensors)
    tied = not any(tensor.name == OUTPUT_HEAD for tensor in tensors)
    total = 0
    for tensor in tensors:
        block = _block_index(tensor.name)
        if main_layers is not None and block is not None and block >= main_layers:
            continue
        size = int(tensor.n_bytes)
        if tensor.name == TOKEN_EMBEDDING and not tied:
            # GGML shapes list the row length first; the last dimension counts the rows.
            rows = int(tensor.shape[-1]) if len(tensor.shape) > 1 else 1
            size = size // max(rows, 1)
        total += size
    return total


def fraction_flag(
    fraction: float | None, *, speculative: bool, one_stream: bool = True
) -> str | None:
    """The roofline's flag for a rate's fraction of its ceiling: above it for any row, far below
    it for a one-stream baseline only."""
    if fraction is None:
        return None
    if fraction > ABOVE_CEILING_FRACTION:
        return "above_ceiling"
    if fraction < FAR_BELOW_FRACTION and not speculative and one_stream:
        return "far_below"
    return None


def draft_bytes_per_step(
    spec_types: Sequence[str],
    *,
    n_max: int | None,
    draft_bytes_per_pass: float | None,
    drafted_per_step: float | None,
) -> int | None:
    """Bytes the drafting for one verify step reads: 0 for n-gram types; one pass of the draft
    (its weights and cache, ``draft_bytes_per_pass``) for a block draft (DFlash); one pass per
    drafted token for an autoregressive draft (the measured drafted tokens per verify step,
    n_max where not measured); None where a type's bytes are unknown (draft-mtp, a draft model
    without its bytes)."""
    passes = 0.0
    for name in spec_types:
        if name in BLOCK_DRAFT_TYPES:
            passes += 1
        elif name in AUTOREGRESSIVE_DRAFT_TYPES:
            per_step = drafted_per_step if drafted_per_step is not None else n_max
            if per_step is None:
                return None
            passes += per_step
        elif name in SELF_DRAFT_TYPES:
            return None
    if not passes:
        return 0
    if draft_bytes_per_pass is None:
        return None
    return round(passes * draft_bytes_per_pass)


def section_roofline(
    *,
    peak_bandwidth_bytes_per_second: int | None,
    target_weight_bytes: int | None,
    tokens_per_second: float | None,
    speculative: bool,
    kv_bytes_per_step: int | None = 0,
    draft_bytes_per_step: int | None = 0,
    tokens_per_step: float = 1.0,
    streams: int = 1,
    context_tokens: float | None = None,
    rate: str = "decode",
) -> dict[str, Any] | None:
    """A ceiling and a rate's fraction of it (the ``runner.results.Roofline`` fields), or None
    without a GPU bandwidth or the target's size: ceiling = bandwidth x streams x tokens per
    step / bytes per step, the bytes being the target's weights, the K/V cache every stream
    reads (``kv_bytes_per_step``, all streams together) and the draft's; a term that is None is
    unknown and left out."""
    if not peak_bandwidth_bytes_per_second or not target_weight_bytes:
        return None
    bytes_per_step = target_weight_bytes + (kv_bytes_per_step or 0) + (draft_bytes_per_step or 0)
    tokens = streams * max(tokens_per_step, 1.0)
    ceiling = peak_bandwidth_bytes_per_second * tokens / bytes_per_step
    fraction = (
        tokens_per_second / ceiling
        if tokens_per_second is not None and math.isfinite(tokens_per_second)
        else None
    )
    return {
        "peak_bandwidth_bytes_per_second": peak_bandwidth_bytes_per_second,
        "bytes_per_token": max(round(bytes_per_step / tokens), 1),
        "ceiling_tokens_per_second": ceiling,
        "fraction": fraction,
        "flag": fraction_flag(fraction, speculative=speculative, one_stream=streams == 1),
        "target_weight_bytes": target_weight_bytes,
        "kv_bytes_per_step": kv_bytes_per_step,
        "draft_bytes_per_step": draft_bytes_per_step,
        "bytes_per_step": bytes_per_step,
        "tokens_per_step": max(tokens_per_step, 1.0),
        "streams": streams,
        "context_tokens": context_tokens,
        "rate": rate,
    }


def _measured(section: Mapping[str, Any], point: int | None = None) -> list[Mapping[str, Any]]:
    return [
        record
        for record in section.get("requests") or []
        if record.get("phase") == "measure" and (point is None or record.get("point") == point)
    ]


def mean_context_tokens(records: Sequence[Mapping[str, Any]]) -> float | None:
    """The mean context a decoding step of these requests reads: each request's prompt plus
    half its generated tokens (its steps read from prompt + 1 to prompt + n), averaged over
    their generated tokens; None without a generated token."""
    tokens = sum(int(record.get("predicted_n") or 0) for record in records)
    if not tokens:
        return None
    weighted = sum(
        int(record.get("predicted_n") or 0)
        * (int(record.get("prompt_n") or 0) + int(record.get("predicted_n") or 0) / 2)
        for record in records
    )
    return weighted / tokens


def _kv_bytes(
    info: Mapping[str, Any] | None, config: BenchmarkConfig, context: float | None
) -> float | None:
    """Bytes of one stream's K/V cache at a context, from a model's K/V elements per token;
    None where the model's metadata does not give them."""
    # runner.compatibility reads runner.gguf.inspect, which reads this module's
    # weight_bytes_per_token: imported here, not at the top, to keep that order.
    from runner.compatibility import kv_bytes_per_token

    elements = (info or {}).get("kv_elements_per_token")
    if not isinstance(elements, int) or context is None:
        return None
    per_token = kv_bytes_per_token(
        elements, cache_type_k=config.cache_type_k, cache_type_v=config.cache_type_v
    )
    return per_token * context


def _section_models(section: Mapping[str, Any]) -> Mapping[str, Any]:
    """A section's ``provenance.models``: the target's and the draft's metadata."""
    return (section.get("provenance") or {}).get("models") or {}


def _draft_bytes_per_pass(
    draft: Mapping[str, Any] | None, config: BenchmarkConfig, context: float | None, streams: int
) -> float | None:
    """The bytes one draft pass reads: the draft's weights once for every stream and each
    stream's own cache (a draft without a known cache size adds its weights only); None
    without a draft of known weight bytes."""
    if not draft or not isinstance(draft.get("weight_bytes_per_token"), int):
        return None
    weights: int = draft["weight_bytes_per_token"]
    return weights + streams * (_kv_bytes(draft, config, context) or 0)


def _tokens_per_step(config: BenchmarkConfig, tau: Any) -> float:
    """Tokens one step yields: the measured tau for a speculative config, else one."""
    return float(tau) if config.is_speculative and isinstance(tau, int | float) else 1.0


def _step(
    section: Mapping[str, Any],
    *,
    config: BenchmarkConfig,
    records: Sequence[Mapping[str, Any]],
    tau: Any,
    streams: int,
) -> dict[str, Any]:
    """The bytes terms and tokens of one step of these requests (``section_roofline``'s)."""
    models = _section_models(section)
    context = mean_context_tokens(records)
    target_kv = _kv_bytes(_target(section), config, context)
    drafted = sum(int(r.get("draft_n") or 0) for r in records)
    steps = sum(int(r.get("verify_steps") or 0) for r in records)
    return {
        "kv_bytes_per_step": round(streams * target_kv) if target_kv is not None else None,
        "draft_bytes_per_step": draft_bytes_per_step(
            config.spec_types,
            n_max=config.n_max,
            draft_bytes_per_pass=_draft_bytes_per_pass(
                models.get("draft"), config, context, streams
            ),
            drafted_per_step=drafted / steps if steps else None,
        ),
        "tokens_per_step": _tokens_per_step(config, tau),
        "streams": streams,
        "context_tokens": context,
    }


def registered_bandwidth(gpu_name: str) -> int:
    """A GPU model's registered peak memory bandwidth (``REGISTERED_BANDWIDTH``, by its
    normalised name), or ``FASTEST_BANDWIDTH`` for a model the register does not know."""
    return REGISTERED_BANDWIDTH.get(gpu_name, FASTEST_BANDWIDTH)


def derived_roofline(
    section: Mapping[str, Any],
    *,
    run: Mapping[str, Any],
    peak_bandwidth_bytes_per_second: int | None = None,
) -> dict[str, Any] | None:
    """A result section's roofline from the result's own data, as the runner computes it: the
    run's engine must be CUDA and its host's bandwidth known (``provenance.system``), the
    section's target must have its bytes per token (``provenance.models.target``). One stream:
    the section's summary decode mean against the ceiling of its tau and its measured requests'
    mean context. A concurrency section: each level's aggregate tok/s against that level's
    ceiling (``levels``), the lowest level's figures on top. None where any input is missing.

    With ``peak_bandwidth_bytes_per_second`` (the door's figure for the hardware kind) that
    bandwidth is the ceiling's, on any engine: no machine decodes faster than its fastest memory.
    """
    engine = run.get("engine") or {}
    if not isinstance(section.get("config"), Mapping):
        return None
    if peak_bandwidth_bytes_per_second is None and engine.get("backend") != "cuda":
        return None
    config = BenchmarkConfig.from_canonical(dict(section["config"]))
    common: dict[str, Any] = {
        "peak_bandwidth_bytes_per_second": peak_bandwidth_bytes_per_second
        or _system(run).get("gpu_peak_bandwidth_bytes_per_second"),
        "target_weight_bytes": _target(section).get("weight_bytes_per_token"),
        "speculative": config.is_speculative,
    }
    levels = _concurrency_levels(section)
    if not levels:
        summary = section.get("summary") or {}
        step = _step(
            section, config=config, records=_measured(section), tau=summary.get("tau"), streams=1
        )
        return section_roofline(
            **common, **step, tokens_per_second=_summary_mean(section, "decode_tokens_per_second")
        )
    return _concurrency_roofline(section, config=config, levels=levels, common=common)


def _system(run: Mapping[str, Any]) -> Mapping[str, Any]:
    """A run's ``provenance.system``: its host's figures."""
    return (run.get("provenance") or {}).get("system") or {}


def _target(section: Mapping[str, Any]) -> Mapping[str, Any]:
    """A section's ``provenance.models.target``: the target model's metadata."""
    return _section_models(section).get("target") or {}


def _summary_mean(section: Mapping[str, Any], figure: str) -> Any:
    """The mean of one figure of a section's summary; None where the summary lacks it."""
    return ((section.get("summary") or {}).get(figure) or {}).get("mean")


def _concurrency_levels(section: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """A section's concurrency points with their indices, lowest level first."""
    levels = [
        (index, point)
        for index, point in enumerate(section.get("points") or [])
        if isinstance(point, Mapping) and point.get("concurrency") is not None
    ]
    return sorted(levels, key=lambda item: item[1]["concurrency"])


def _concurrency_roofline(
    section: Mapping[str, Any],
    *,
    config: BenchmarkConfig,
    levels: list[tuple[int, Mapping[str, Any]]],
    common: Mapping[str, Any],
) -> dict[str, Any] | None:
    """A concurrency section's roofline: each level's aggregate tok/s against that level's
    ceiling (``levels``), the lowest level's figures on top; None where any level has none."""
    figures = []
    for index, point in levels:
        aggregate = point.get("aggregate_tokens_per_second") or {}
        step = _step(
            section,
            config=config,
            records=_measured(section, index),
            tau=point.get("tau"),
            streams=int(point["concurrency"]),
        )
        level = section_roofline(
            **common, **step, tokens_per_second=aggregate.get("mean"), rate="aggregate"
        )
        if level is None:
            return None
        figures.append(level | {"concurrency": int(point["concurrency"])})
    top = {key: value for key, value in figures[0].items() if key != "concurrency"}
    # Any level above its ceiling is a measurement error the row carries.
    if any(level["flag"] == "above_ceiling" for level in figures):
        top["flag"] = "above_ceiling"
    return top | {"levels": figures}


def legacy_roofline(section: Mapping[str, Any], *, run: Mapping[str, Any]) -> dict[str, Any] | None:
    """The target-only roofline of results written before the step was counted: the target's
    weights alone, against the section's pooled decode mean, speculative rows unflagged.
    ``runner.evidence`` checks such a stored figure with it; nothing shows it."""
    engine = run.get("engine") or {}
    if engine.get("backend") != "cuda" or not isinstance(section.get("config"), Mapping):
        return None
    bandwidth = _system(run).get("gpu_peak_bandwidth_bytes_per_second")
    weights = _target(section).get("weight_bytes_per_token")
    if not bandwidth or not weights:
        return None
    speculative = BenchmarkConfig.from_canonical(dict(section["config"])).is_speculative
    decode = _summary_mean(section, "decode_tokens_per_second")
    ceiling = bandwidth / weights
    fraction = decode / ceiling if decode is not None and math.isfinite(decode) else None
    return {
        "peak_bandwidth_bytes_per_second": bandwidth,
        "bytes_per_token": weights,
        "ceiling_tokens_per_second": ceiling,
        "fraction": fraction,
        "flag": None if speculative else fraction_flag(fraction, speculative=False),
    }
