"""Where a result came from: the machine, its GPUs, and the software versions.

This module owns what the runner records of its host (``system_info``, every GPU the engine can
use as ``visible_gpus`` reads it from NVML, its CPU model as ``cpu_name`` reads it), the one
spelling of a GPU's name (``normalise_gpu_name``), of a CPU model's (``normalise_cpu_name``) and
of a set of GPUs (``describe_gpus``: "2x RTX 3090 24GB"), which the service uses for its
hardware registry too, and the peak-memory sampler that runs beside an engine (the whole and
each GPU's).
"""

from __future__ import annotations

import platform
import re
import socket
import sys
import threading
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil

from runner.config import MAX_GPUS
from runner.energy import gpu_handles
from runner.roofline import peak_bandwidth

PACKAGES = ("gguf", "numpy", "httpx", "pydantic", "psutil", "nvidia-ml-py")


def cpu_name() -> str:
    """This machine's CPU model as /proc/cpuinfo names it (a result's ``system.cpu``)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


_TRADEMARK_SIGNS = re.compile(r"\((?:R|TM)\)|[®™]", re.IGNORECASE)
_VENDOR_WORDS = re.compile(r"\b(?:NVIDIA|GeForce|Corporation)\b", re.IGNORECASE)


def normalise_gpu_name(raw: str) -> str:
    """One spelling per GPU: vendor words and trademark signs removed, spaces collapsed.

    "NVIDIA GeForce RTX 4090" and "GeForce RTX(TM) 4090" are both "RTX 4090"; an empty or
    vendor-only name is "unknown".
    """
    name = _TRADEMARK_SIGNS.sub(" ", raw)
    name = _VENDOR_WORDS.sub(" ", name)
    return " ".join(name.split()) or "unknown"


def normalise_cpu_name(raw: str) -> str:
    """One spelling per CPU model: trademark signs removed, spaces collapsed, case folded
    ("Intel(R) Xeon(R) Platinum 8480+" and "Intel Xeon Platinum 8480+" are one model)."""
    return " ".join(_TRADEMARK_SIGNS.sub(" ", raw).split()).casefold()


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _describe_visible(pynvml: ModuleType) -> list[dict[str, Any]]:
    """Each GPU the engine can use, in its order: its index there, name and memory."""
    gpus = []
    for index, handle in enumerate(gpu_handles(pynvml)[:MAX_GPUS]):
        raw = _text(pynvml.nvmlDeviceGetName(handle))
        gpus.append(
            {
                "index": index,
                "name": normalise_gpu_name(raw),
                "raw_name": raw,
                "memory_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total),
            }
        )
    return gpus


def visible_gpus() -> list[dict[str, Any]] | None:
    """Every GPU CUDA makes visible to the engine (``CUDA_VISIBLE_DEVICES``, all when unset), as
    NVML describes it: index (the engine's GPU number), normalised name, raw name and memory.
    None where there is no NVML; an empty list where it sees no GPU."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        return _describe_visible(pynvml)
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()


def describe_gpus(gpus: list[dict[str, Any]]) -> str:
    """A set of GPUs in words, each model with its count and memory: "2x RTX 3090 24GB",
    "RTX 4090 24GB + RTX 3090 24GB"; the hardware registry's kind name (``gpus`` as
    ``visible_gpus`` gives them, or ``{"name", "memory_bytes"}`` alone)."""
    groups: list[tuple[str, int]] = []
    counts: list[int] = []
    for gpu in gpus:
        memory = gpu.get("memory_bytes")
        key = (normalise_gpu_name(gpu["name"]), round(memory / 2**30) if memory else 0)
        if groups and groups[-1] == key:
            counts[-1] += 1
        else:
            groups.append(key)
            counts.append(1)
    parts = []
    for (name, gib), count in zip(groups, counts, strict=True):
        described = f"{name} {gib}GB" if gib else name
        parts.append(f"{count}x {described}" if count > 1 else described)
    return " + ".join(parts) or "no GPU"


# NVML's total memory of one GPU model varies a little with the driver and board (an H200 is
# 140.4 GiB where its kind says 141): within this share it is the same GPU.
GPU_MEMORY_TOLERANCE = 0.05


def gpu_set_problem(
    *, wanted: list[dict[str, Any]], have: list[dict[str, Any]], label: str
) -> str | None:
    """Why a host whose engine sees the GPUs ``have`` cannot run a job of the kind made of the
    GPUs ``wanted`` (each ``{"name", "memory_bytes"}``), or None: it must see as many; for a kind
    of several, each of the kind's model and memory too, in order, so that a run on it is a run
    on the kind. A larger host serves a smaller kind with CUDA_VISIBLE_DEVICES narrowed to it."""
    if len(have) != len(wanted):
        seen = describe_gpus(have)
        return (
            f"the kind is {label}, but this host's engine sees {seen} ({len(have)} "
            f"GPU{'s' if len(have) != 1 else ''}; CUDA_VISIBLE_DEVICES narrows a larger host)"
        )
    if len(wanted) < 2:
        return None
    for index, (gpu, kind) in enumerate(zip(have, wanted, strict=True)):
        name, kind_name = normalise_gpu_name(gpu["name"]), normalise_gpu_name(kind["name"] or "")
        if name != kind_name:
            return f"GPU {index} of this host is {name}, not {kind_name} as in {label}"
        memory, needed = gpu.get("memory_bytes"), kind.get("memory_bytes")
        if memory and needed and abs(memory - needed) > GPU_MEMORY_TOLERANCE * needed:
            return (
                f"GPU {index} of this host has {memory / 2**30:.0f} GiB, not the "
                f"{needed / 2**30:.0f} GiB of {label}"
            )
    return None


def gpu_info() -> dict[str, Any] | None:
    """The first GPU as NVML sees it, or None where there is no NVIDIA GPU or no NVML."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        if pynvml.nvmlDeviceGetCount() < 1:
            return None
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(handle)
        name = name.decode() if isinstance(name, bytes) else name
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        return {
            "gpu": normalise_gpu_name(name),
            "gpu_raw_name": name,
            "gpu_count": pynvml.nvmlDeviceGetCount(),
            "gpu_memory_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total),
            "driver": driver,
            "cuda": f"{cuda // 1000}.{(cuda % 1000) // 10}",
            "gpus": _describe_visible(pynvml),
        }
    finally:
        pynvml.nvmlShutdown()


def system_info() -> dict[str, Any]:
    """CPU, memory, GPU, driver, CUDA, Python and package versions of this machine."""
    info = {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu": cpu_name(),
        "cpu_count": psutil.cpu_count(logical=True),
        "memory_bytes": psutil.virtual_memory().total,
        "python": sys.version.split()[0],
        "packages": _package_versions(),
        "gpu": None,
        "gpu_memory_bytes": None,
        "driver": None,
        "cuda": None,
        # Filled in by gpu_info; present on every host so a result has one shape.
        "gpu_raw_name": None,
        "gpu_count": None,
        # Every GPU the engine can use (visible_gpus); None without NVML.
        "gpus": None,
    }
    gpu = gpu_info()
    if gpu:
        info.update(gpu)
    # The peak memory bandwidth of the first GPU CUDA makes visible: the roofline's ceiling.
    info["gpu_peak_bandwidth_bytes_per_second"] = peak_bandwidth()
    return info


class MemorySampler:
    """Samples peak memory while a server runs: GPU memory in use through NVML, else process RSS.

    On GPUs it samples every GPU the engine can use: ``peak_bytes`` is the largest total over
    them at one moment, ``gpu_peaks`` each GPU's own peak (in the engine's GPU order; None off
    NVML). A GPU's figure is the server's own memory there where NVML lists its processes, else
    (containers often hide other PIDs) the GPU's whole memory in use.
    """

    def __init__(self, pid: int, interval_s: float = 0.2) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.peak_bytes = 0
        self.gpu_peaks: list[int] | None = None
        self.kind = "process"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._nvml_handles: list[Any] = []
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml_handles = gpu_handles(pynvml)[:MAX_GPUS]
            if self._nvml_handles:
                self.kind = "gpu"
                self.gpu_peaks = [0] * len(self._nvml_handles)
        except Exception:  # noqa: BLE001 - no NVML means no GPU sampling, not an error
            self._nvml_handles = []

    def _sample_gpus(self) -> list[int]:
        import pynvml

        own = [self._own_gpu_memory(pynvml, handle) for handle in self._nvml_handles]
        if any(amount is not None for amount in own):
            return [amount or 0 for amount in own]
        # The server is on none of them as far as NVML says: it hides PIDs (a container).
        return [int(pynvml.nvmlDeviceGetMemoryInfo(h).used) for h in self._nvml_handles]

    def _own_gpu_memory(self, pynvml: ModuleType, handle: Any) -> int | None:
        """The memory the server's own processes hold on one GPU; None where NVML lists none."""
        mine = [
            int(process.usedGpuMemory)
            for process in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
            if process.pid == self.pid and process.usedGpuMemory
        ]
        return sum(mine) if mine else None

    def _sample(self) -> int:
        if self._nvml_handles:
            amounts = self._sample_gpus()
            if self.gpu_peaks is not None:
                self.gpu_peaks = [max(a, b) for a, b in zip(self.gpu_peaks, amounts, strict=True)]
            return sum(amounts)
        try:
            return int(psutil.Process(self.pid).memory_info().rss)
        except psutil.Error:
            return 0

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak_bytes = max(self.peak_bytes, self._sample())
            except Exception:  # noqa: BLE001 - a failed sample must never stop a benchmark
                pass
            self._stop.wait(self.interval_s)

    def start(self) -> MemorySampler:
        self._thread.start()
        return self

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(timeout=5)
        return self.peak_bytes
