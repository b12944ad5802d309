"""The memory-bandwidth roofline: how fast decoding could go at most, and how close a run came.

Decoding one token reads (nearly) every weight of the model once, so a GPU cannot decode faster
than its peak memory bandwidth over the bytes one token reads. This module owns the three
inputs and the verdict:
- ``peak_bandwidth``: the GPU's peak memory bandwidth from NVML (memory bus width and maximum
  memory clock), for the first GPU the engine sees (``runner.energy.gpu_handles``);
- ``weight_bytes_per_token``: the bytes one generated token reads, from a GGUF file's tensors
  (``runner.gguf.inspect`` records it as ``ModelInfo.weight_bytes_per_token``);
- ``section_roofline``: a section's ceiling, its decode speed's fraction of it and a flag.

A baseline above the ceiling is impossible, so it is a measurement error (``above_ceiling``),
and a baseline on a CUDA engine far below it is most likely running on the CPU (``far_below``).
The flags are for baselines only: a speculative run may exceed 1 legitimately, since one pass of
the target yields several tokens. CPU hosts have no roofline at all: null, not a guess.
``runner.evidence`` recomputes every figure of a result's roofline from its own data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any, Protocol

from runner.config import BenchmarkConfig
from runner.energy import gpu_handles, load_nvml

# Bytes per second = bus width in bits x memory clock in Hz x transfers per clock / 8. NVML
# reports GDDR and HBM memory clocks such that two transfers per reported clock give the
# vendors' figures (H100 SXM: 5120 bits x 2619 MHz x 2 / 8 = 3.35 TB/s), but HBM's reported
# clock convention may differ between generations and drivers; the lead validates this factor
# on the H200 (bench/gpu/energy_probe.py) against its specified 4.8 TB/s.
TRANSFERS_PER_MEMORY_CLOCK = 2
BITS_PER_BYTE = 8
HZ_PER_MHZ = 1_000_000

# A baseline's decode speed over its ceiling: above this it is a measurement error (the margin
# is the bandwidth figure's own uncertainty), below FAR_BELOW_FRACTION a likely CPU fallback.
ABOVE_CEILING_FRACTION = 1.05
FAR_BELOW_FRACTION = 0.05

TOKEN_EMBEDDING = "token_embd.weight"
OUTPUT_HEAD = "output.weight"

ROOFLINE_FIGURES = (
    "peak_bandwidth_bytes_per_second",
    "bytes_per_token",
    "ceiling_tokens_per_second",
    "fraction",
    "flag",
)


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


def fraction_flag(fraction: float | None, *, speculative: bool) -> str | None:
    """The roofline's flag for a section's fraction of the ceiling (baselines only)."""
    if fraction is None or speculative:
        return None
    if fraction > ABOVE_CEILING_FRACTION:
        return "above_ceiling"
    if fraction < FAR_BELOW_FRACTION:
        return "far_below"
    return None


def section_roofline(
    *,
    peak_bandwidth_bytes_per_second: int | None,
    bytes_per_token: int | None,
    decode_tokens_per_second: float | None,
    speculative: bool,
) -> dict[str, Any] | None:
    """A section's roofline (the ``runner.results.Roofline`` fields), or None without a GPU
    bandwidth or a model size: the ceiling, the mean decode speed's fraction of it and a flag."""
    if not peak_bandwidth_bytes_per_second or not bytes_per_token:
        return None
    ceiling = peak_bandwidth_bytes_per_second / bytes_per_token
    fraction = (
        decode_tokens_per_second / ceiling
        if decode_tokens_per_second is not None and math.isfinite(decode_tokens_per_second)
        else None
    )
    return {
        "peak_bandwidth_bytes_per_second": peak_bandwidth_bytes_per_second,
        "bytes_per_token": bytes_per_token,
        "ceiling_tokens_per_second": ceiling,
        "fraction": fraction,
        "flag": fraction_flag(fraction, speculative=speculative),
    }


def derived_roofline(
    section: Mapping[str, Any], *, run: Mapping[str, Any]
) -> dict[str, Any] | None:
    """A result section's roofline from the result's own data, as the runner computes it: the
    run's engine must be CUDA and its host's bandwidth known (``provenance.system``), the
    section's target must have its bytes per token (``provenance.models.target``), and the
    fraction is of the section's summary decode mean (which ``runner.evidence`` checks against
    its requests). None where any of these is missing."""
    engine = run.get("engine") or {}
    system = (run.get("provenance") or {}).get("system") or {}
    target = ((section.get("provenance") or {}).get("models") or {}).get("target") or {}
    if engine.get("backend") != "cuda" or not isinstance(section.get("config"), Mapping):
        return None
    decode = (section.get("summary") or {}).get("decode_tokens_per_second") or {}
    return section_roofline(
        peak_bandwidth_bytes_per_second=system.get("gpu_peak_bandwidth_bytes_per_second"),
        bytes_per_token=target.get("weight_bytes_per_token"),
        decode_tokens_per_second=decode.get("mean"),
        speculative=BenchmarkConfig.from_canonical(dict(section["config"])).is_speculative,
    )
