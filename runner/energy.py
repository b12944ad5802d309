"""Energy per request from NVML's total energy counter, and a section's energy figures.

This module owns how the runner measures energy: which GPUs count (``gpu_handles``), the meter
read around each request (``EnergyMeter``), the split of a concurrent wave's energy among its
requests (``share_by_tokens``) and the summary figures derived from the request records
(``energy_figures``, which ``runner.evidence`` recomputes to check a result's claim).

The counter is ``nvmlDeviceGetTotalEnergyConsumption``: millijoules since the driver loaded, one
per GPU (Volta and newer). The meter sums it over every GPU that CUDA makes visible to the engine
(``CUDA_VISIBLE_DEVICES``: indices or ``GPU-`` UUIDs, all GPUs when unset), so a model split
over several GPUs is measured whole. It measures the whole GPU, not one process: what else runs
on the same GPUs at the same time is counted too. NVML updates the counter every few tens of
milliseconds, so a request of a second or more is measured to within a few percent.

Where there is no figure there is None, never 0 or a guess: no ``pynvml`` (the ``nvidia-ml-py``
package), no NVIDIA driver, no visible GPU, a GPU without the counter, a MIG instance (which has
no counter of its own), a counter that went backwards (a driver reload), a failed read, or an
engine that does not run on CUDA (the runner opens no meter then).

Sequential requests (every protocol that sends one request at a time)::

    meter = EnergyMeter.open()          # None where energy cannot be measured
    before = read(meter)
    record = session.measure(spec)
    record["energy_joules"] = joules_between(before, read(meter))

Concurrent requests (one wave of requests in flight at once): read the meter before the wave
is sent and after its last request finished, then give each request its share in proportion
to the tokens it generated::

    before = read(meter)
    records = run_wave(specs)
    shares = share_by_tokens(
        joules_between(before, read(meter)), [record["predicted_n"] for record in records]
    )
    for record, joules in zip(records, shares, strict=True):
        record["energy_joules"] = joules

Either way the section's ``energy_joules`` is the sum over its measured requests, so a wave's
energy is counted once, and ``joules_per_token`` is the same whichever way it was split. Each
GPU's own share (``joules_per_gpu_between``, summed over the measured waves by ``add_per_gpu``)
is the section's ``summary.gpus[].energy_joules``; they add up to its ``energy_joules``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

# The summary fields energy_figures derives, in the order the result model lists them. Results
# written before carry "joules_per_accepted_token" too (legacy_joules_per_accepted_token).
ENERGY_FIGURES = ("energy_joules", "joules_per_token")

MILLIJOULES_PER_JOULE = 1000.0

# Each GPU model's idle floor in watts, by its normalised name: at most half of what it draws
# idle (the H200 drew 81.9 W idle, bench/gpu/energy_probe.py; the others' idle draw as their
# vendors and reviewers report it), so a GPU that is decoding draws more. A request's energy
# below its kind's floor over its time is impossible (``runner.door``).
IDLE_FLOOR_WATTS = {
    "H200": 40.0,
    "H200 NVL": 40.0,
    "H100 80GB HBM3": 30.0,
    "H100 NVL": 30.0,
    "H100 PCIe": 20.0,
    "B200": 40.0,
    "A100-SXM4-80GB": 25.0,
    "A100-SXM4-40GB": 25.0,
    "A100 80GB PCIe": 20.0,
    "A100-PCIE-40GB": 20.0,
    "L40S": 10.0,
    "L4": 5.0,
    "RTX 5090": 5.0,
    "RTX 4090": 5.0,
    "RTX 3090": 5.0,
}
# A GPU the register does not know: no GPU that is awake draws less than a watt.
UNKNOWN_IDLE_FLOOR_WATTS = 1.0


def idle_floor_watts(gpu_name: str) -> float:
    """A GPU model's idle floor in watts (``IDLE_FLOOR_WATTS``, by its normalised name), or
    ``UNKNOWN_IDLE_FLOOR_WATTS`` for a model the register does not know."""
    return IDLE_FLOOR_WATTS.get(gpu_name, UNKNOWN_IDLE_FLOOR_WATTS)


# One reading: each metered GPU's counter in millijoules, in the order of the meter's GPUs.
Reading = tuple[int, ...]


def load_nvml() -> ModuleType | None:
    """The ``pynvml`` module, imported on first use; None where nvidia-ml-py is not installed."""
    try:
        import pynvml
    except ImportError:
        return None
    module: ModuleType = pynvml
    return module


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def visible_devices(environ: Mapping[str, str] | None = None) -> list[int | str] | None:
    """``CUDA_VISIBLE_DEVICES`` as a list of indices and UUID prefixes; None when it is unset.

    As CUDA does, the list ends at the first entry that names no GPU: ``-1`` (or an empty
    value) hides every GPU, and a ``MIG-`` instance is not a whole GPU with its own counter.
    """
    value = (os.environ if environ is None else environ).get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    devices: list[int | str] = []
    for entry in (part.strip() for part in value.split(",")):
        if entry.isdigit():
            devices.append(int(entry))
        elif entry.startswith("GPU-"):
            devices.append(entry)
        else:
            break
    return devices


def gpu_handles(nvml: ModuleType, environ: Mapping[str, str] | None = None) -> list[Any]:
    """NVML handles of the GPUs visible to CUDA, each once, in CUDA's order.

    CUDA's indices follow ``CUDA_DEVICE_ORDER`` (fastest first by default) and NVML's the PCI
    bus; the runner starts llama-server with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (unless it is set),
    so that the engine's GPU numbers are these (on identical GPUs the orders agree anyway).
    """
    count = int(nvml.nvmlDeviceGetCount())
    handles = [nvml.nvmlDeviceGetHandleByIndex(index) for index in range(count)]
    wanted = visible_devices(environ)
    if wanted is None:
        return handles
    # Read only when an entry names a GPU by its UUID, and then once.
    uuids = functools.cache(lambda: [_text(nvml.nvmlDeviceGetUUID(h)) for h in handles])
    chosen: list[int] = []
    for entry in wanted:
        index = _device_index(entry, count=count, uuids=uuids)
        if index is None:
            break
        if index not in chosen:
            chosen.append(index)
    return [handles[index] for index in chosen]


def _device_index(entry: int | str, *, count: int, uuids: Callable[[], list[str]]) -> int | None:
    """The NVML index a ``CUDA_VISIBLE_DEVICES`` entry names, or None where it names no GPU
    (CUDA's list ends there)."""
    if isinstance(entry, int):
        return entry if entry < count else None
    # CUDA accepts any unique prefix of a GPU's UUID.
    matches = [i for i, uuid in enumerate(uuids()) if uuid.startswith(entry)]
    return matches[0] if len(matches) == 1 else None


class EnergyMeter:
    """NVML's total energy counter of the GPUs the engine uses, read as often as asked."""

    def __init__(self, nvml: ModuleType, handles: list[Any]) -> None:
        self._nvml = nvml
        self._handles = handles
        self._open = True

    @classmethod
    def open(
        cls, environ: Mapping[str, str] | None = None, *, nvml: ModuleType | None = None
    ) -> EnergyMeter | None:
        """A meter of the visible GPUs, or None where their energy cannot be read."""
        nvml = nvml or load_nvml()
        if nvml is None:
            return None
        try:
            nvml.nvmlInit()
        except Exception:  # noqa: BLE001 - no driver or library means no energy, not an error
            return None
        meter = None
        try:
            handles = gpu_handles(nvml, environ)
            if handles:
                meter = cls(nvml, handles)
                if meter.read() is None:
                    meter = None
        except Exception:  # noqa: BLE001 - a GPU NVML cannot describe gives no energy
            meter = None
        if meter is None:
            _shutdown(nvml)
        return meter

    @property
    def gpu_count(self) -> int:
        """How many GPUs the meter sums."""
        return len(self._handles)

    def read(self) -> Reading | None:
        """Every metered GPU's counter in millijoules now; None if any of them cannot be read."""
        if not self._open:
            return None
        try:
            return tuple(
                int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
                for handle in self._handles
            )
        except Exception:  # noqa: BLE001 - a failed read loses one figure, never the benchmark
            return None

    def close(self) -> None:
        """Release NVML (once; reads after this give None)."""
        if self._open:
            self._open = False
            _shutdown(self._nvml)


def _shutdown(nvml: ModuleType) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - nothing to release is not an error
        pass


def read(meter: EnergyMeter | None) -> Reading | None:
    """The meter's reading now, or None without a meter."""
    return meter.read() if meter is not None else None


def joules_between(before: Reading | None, after: Reading | None) -> float | None:
    """The energy the metered GPUs used between two readings, in joules.

    None if either reading is missing, they are of different GPUs, or a counter went backwards
    (the driver was reloaded between them, so the difference means nothing).
    """
    if before is None or after is None or len(before) != len(after):
        return None
    if any(end < start for start, end in zip(before, after, strict=True)):
        return None
    return sum(end - start for start, end in zip(before, after, strict=True)) / (
        MILLIJOULES_PER_JOULE
    )


def joules_per_gpu_between(before: Reading | None, after: Reading | None) -> list[float] | None:
    """Each metered GPU's energy between two readings, in joules, in the meter's GPU order;
    None where ``joules_between`` has no figure. They add up to ``joules_between``."""
    if joules_between(before, after) is None or before is None or after is None:
        return None
    return [(end - start) / MILLIJOULES_PER_JOULE for start, end in zip(before, after, strict=True)]


def add_per_gpu(total: list[float] | None, joules: list[float] | None) -> list[float] | None:
    """Per-GPU energies summed over waves: None as soon as one wave has no figure."""
    if total is None or joules is None or len(total) != len(joules):
        return None
    return [a + b for a, b in zip(total, joules, strict=True)]


def share_by_tokens(joules: float | None, tokens: Sequence[int]) -> list[float | None]:
    """A concurrent wave's energy split among its requests in proportion to generated tokens.

    The shares add up to the wave's energy. A wave that generated no tokens at all is split
    evenly; a wave without an energy figure gives every request None.
    """
    if joules is None:
        return [None] * len(tokens)
    total = sum(tokens)
    if total == 0:
        return [joules / len(tokens)] * len(tokens) if tokens else []
    return [joules * count / total for count in tokens]


def energy_figures(records: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """A section's energy summary from its measured requests' ``energy_joules``.

    ``energy_joules`` is their sum and ``joules_per_token`` that over their generated tokens.
    Each request's energy is the counter across its whole time, so it includes its prefill and
    any idle time within it; a concurrent wave's is shared out by tokens (``share_by_tokens``),
    an allocation rather than a measurement of one request. There is no separate energy of an
    accepted draft token: every token costs a share of the same steps. Every figure is None
    unless every request has its energy.
    """
    energies = [joules for record in records if (joules := record.get("energy_joules")) is not None]
    if not records or len(energies) < len(records):
        return dict.fromkeys(ENERGY_FIGURES)
    total = float(sum(energies))
    generated = sum(record["predicted_n"] for record in records)
    return {
        "energy_joules": total,
        "joules_per_token": total / generated if generated else None,
    }


def legacy_joules_per_accepted_token(records: Sequence[dict[str, Any]]) -> float | None:
    """What results written before it was dropped called ``joules_per_accepted_token``: the
    whole energy over the accepted draft tokens (None without one), so that ``runner.evidence``
    can still check such a file; it measures no energy of its own and nothing shows it."""
    total = energy_figures(records)["energy_joules"]
    accepted = sum(record["draft_n_accepted"] for record in records)
    return total / accepted if total is not None and accepted else None
