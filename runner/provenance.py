"""Where a result came from: the machine, its GPU, and the software versions.

This module owns what the runner records of its host (``system_info``), the one spelling of a
GPU's name (``normalise_gpu_name``, which the service uses for its hardware registry too), and
the peak-memory sampler that runs beside an engine.
"""

from __future__ import annotations

import platform
import re
import socket
import sys
import threading
from importlib import metadata
from pathlib import Path

import psutil

from runner.roofline import peak_bandwidth

PACKAGES = ("gguf", "numpy", "httpx", "pydantic", "psutil", "nvidia-ml-py")


def _cpu_name() -> str:
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


def gpu_info() -> dict | None:
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
        }
    finally:
        pynvml.nvmlShutdown()


def system_info() -> dict:
    """CPU, memory, GPU, driver, CUDA, Python and package versions of this machine."""
    info = {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu": _cpu_name(),
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
    }
    gpu = gpu_info()
    if gpu:
        info.update(gpu)
    # The peak memory bandwidth of the first GPU CUDA makes visible: the roofline's ceiling.
    info["gpu_peak_bandwidth_bytes_per_second"] = peak_bandwidth()
    return info


class MemorySampler:
    """Samples peak memory while a server runs: GPU memory in use through NVML, else process RSS."""

    def __init__(self, pid: int, interval_s: float = 0.2) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.peak_bytes = 0
        self.kind = "process"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._nvml_handle = None
        self._baseline_gpu_bytes = 0
        try:
            import pynvml

            pynvml.nvmlInit()
            if pynvml.nvmlDeviceGetCount() > 0:
                self._nvml_handle = pynvml.nvmlDeviceGetHandleByIndex(0)
                self.kind = "gpu"
        except Exception:  # noqa: BLE001 - no NVML means no GPU sampling, not an error
            self._nvml_handle = None

    def _sample(self) -> int:
        if self._nvml_handle is not None:
            import pynvml

            for process in pynvml.nvmlDeviceGetComputeRunningProcesses(self._nvml_handle):
                if process.pid == self.pid and process.usedGpuMemory:
                    return int(process.usedGpuMemory)
            # Containers often hide other PIDs from NVML: fall back to the device's usage.
            return int(pynvml.nvmlDeviceGetMemoryInfo(self._nvml_handle).used)
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
