"""A stand-in for the ``pynvml`` module (nvidia-ml-py) for the runner's energy and roofline tests.

It answers the NVML calls ``runner.energy``, ``runner.roofline`` and ``runner.provenance`` make,
for the GPUs the test describes, one or several: each one's UUID, name, total and used memory,
the processes NVML lists on it with their memory, total energy counter (millijoules; None where
the GPU has none), memory bus width and maximum memory clock. ``install`` puts it where
``import pynvml`` finds it. It is the fast unit layer only: the real NVML is exercised by
``bench/gpu/energy_probe.py`` on the H200.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import pytest

NVML_CLOCK_MEM = 2
NVML_ERROR_NOT_SUPPORTED = 3


class NVMLError(Exception):
    """pynvml's error type: every failing call raises it."""


@dataclass
class FakeGpu:
    uuid: str
    energy_millijoules: int | None = 1_000_000
    bus_width_bits: int = 6144
    max_memory_clock_mhz: int = 3201
    name: str = "NVIDIA H200"
    memory_total: int = 150_000_000_000
    memory_used: int = 1_000_000
    # (pid, bytes) of each compute process NVML lists on the GPU; empty as in a container.
    processes: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class FakeNvml:
    """The module's functions over a list of fake GPUs; counts inits and shutdowns."""

    gpus: list[FakeGpu]
    init_fails: bool = False
    inits: int = 0
    shutdowns: int = 0
    energy_reads: int = 0
    NVMLError: type[Exception] = NVMLError
    NVML_CLOCK_MEM: int = NVML_CLOCK_MEM
    calls: list[str] = field(default_factory=list)

    def nvmlInit(self) -> None:
        if self.init_fails:
            raise NVMLError("Driver Not Loaded")
        self.inits += 1

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        if not 0 <= index < len(self.gpus):
            raise NVMLError("Invalid Argument")
        return self.gpus[index]

    def nvmlDeviceGetUUID(self, handle: FakeGpu) -> str:
        return handle.uuid

    def nvmlDeviceGetName(self, handle: FakeGpu) -> str:
        return handle.name

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: FakeGpu) -> int:
        self.energy_reads += 1
        if handle.energy_millijoules is None:
            raise NVMLError("Not Supported")
        return handle.energy_millijoules

    def nvmlDeviceGetMemoryBusWidth(self, handle: FakeGpu) -> int:
        return handle.bus_width_bits

    def nvmlDeviceGetMaxClockInfo(self, handle: FakeGpu, clock: int) -> int:
        if clock != NVML_CLOCK_MEM:
            raise NVMLError("Invalid Argument")
        return handle.max_memory_clock_mhz

    # What runner.provenance's GPU description and memory sampler read.
    def nvmlSystemGetDriverVersion(self) -> str:
        return "580.1"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 13000

    def nvmlDeviceGetMemoryInfo(self, handle: FakeGpu):
        return type("Memory", (), {"total": handle.memory_total, "used": handle.memory_used})()

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeGpu) -> list:
        return [
            type("Process", (), {"pid": pid, "usedGpuMemory": used})()
            for pid, used in handle.processes
        ]


def rtx_3090s(count: int, **overrides) -> list[FakeGpu]:
    """count fake RTX 3090s of 24 GiB, as NVML names them (the usual two-GPU home rig)."""
    return fake_gpus(count, name="NVIDIA GeForce RTX 3090", memory_total=24 * 2**30, **overrides)


def fake_gpus(count: int, **overrides) -> list[FakeGpu]:
    """count fake GPUs with UUIDs GPU-aaaa..., GPU-bbbb..., each 1000 J into its counter."""
    return [
        FakeGpu(uuid=f"GPU-{chr(ord('a') + i) * 8}-0000-0000-0000-000000000000", **overrides)
        for i in range(count)
    ]


def install(monkeypatch: pytest.MonkeyPatch, nvml: FakeNvml | None) -> None:
    """Make ``import pynvml`` give the fake, or fail as if nvidia-ml-py were not installed."""
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
