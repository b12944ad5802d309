"""What NVML says about this host's GPUs: the roofline's bandwidth inputs and one idle second of energy.

Prints, for every GPU CUDA makes visible (``CUDA_VISIBLE_DEVICES`` honoured, as the runner does):
its name and UUID, memory bus width (bits) and maximum memory clock (MHz), the peak bandwidth the
runner computes from them (``runner.roofline``) beside the vendor's figure where this script
knows it, and the energy NVML's total energy counter rose by over one idle second
(``runner.energy``). With ``--model FILE.gguf`` also the weight bytes one token reads and the
ceiling in tokens per second. One JSON object per line; the last is the summary.

    python bench/gpu/energy_probe.py [--seconds 1] [--model models/8b.gguf]

On an H200 the peak should come out near its specified 4.8 TB/s; if it is off by a factor of
two, runner.roofline.TRANSFERS_PER_MEMORY_CLOCK is the constant to change.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runner.energy import EnergyMeter, gpu_handles, joules_between, load_nvml  # noqa: E402
from runner.gguf.inspect import inspect_model  # noqa: E402
from runner.roofline import bandwidth_from, peak_bandwidth  # noqa: E402

# Vendors' specified memory bandwidth, bytes per second, by a word in NVML's name for the GPU.
SPECIFIED_BANDWIDTH = {"H200": 4.8e12, "H100 80GB HBM3": 3.35e12, "A100-SXM4-80GB": 2.039e12}


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _gpus(nvml) -> list[dict]:
    rows = []
    for index, handle in enumerate(gpu_handles(nvml)):
        name = _text(nvml.nvmlDeviceGetName(handle))
        row: dict = {
            "visible_index": index,
            "gpu": name,
            "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
        }
        try:
            width = int(nvml.nvmlDeviceGetMemoryBusWidth(handle))
            clock = int(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM))
        except nvml.NVMLError as error:
            row["bandwidth_error"] = str(error)
        else:
            computed = bandwidth_from(width, clock)
            row |= {
                "memory_bus_width_bits": width,
                "max_memory_clock_mhz": clock,
                "computed_peak_bytes_per_second": computed,
            }
            specified = next((v for k, v in SPECIFIED_BANDWIDTH.items() if k in name), None)
            if specified:
                row |= {
                    "specified_bytes_per_second": specified,
                    "computed_over_specified": computed / specified,
                }
        try:
            row["energy_counter_millijoules"] = int(
                nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
            )
        except nvml.NVMLError as error:
            row["energy_error"] = str(error)
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="idle time to meter")
    parser.add_argument("--model", type=Path, help="a GGUF file: its bytes per token and ceiling")
    args = parser.parse_args()
    nvml = load_nvml()
    if nvml is None:
        print(json.dumps({"error": "pynvml (nvidia-ml-py) is not installed"}))
        return 1
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as error:
        print(json.dumps({"error": f"NVML: {error}"}))
    else:
        try:
            for row in _gpus(nvml):
                print(json.dumps(row))
        finally:
            nvml.nvmlShutdown()
    summary: dict = {"peak_bandwidth_bytes_per_second": peak_bandwidth()}
    meter = EnergyMeter.open()
    if meter is None:
        summary["idle_energy"] = "no meter: no visible GPU with an energy counter"
    else:
        before = meter.read()
        started = time.monotonic()
        time.sleep(args.seconds)
        after = meter.read()
        elapsed = time.monotonic() - started
        meter.close()
        joules = joules_between(before, after)
        summary |= {
            "metered_gpus": meter.gpu_count,
            "idle_seconds": round(elapsed, 3),
            "idle_joules": joules,
            "idle_watts": joules / elapsed if joules is not None else None,
        }
    if args.model:
        info = inspect_model(args.model)
        summary |= {"model": str(args.model), "weight_bytes_per_token": info.weight_bytes_per_token}
        if summary["peak_bandwidth_bytes_per_second"] and info.weight_bytes_per_token:
            summary["ceiling_tokens_per_second"] = (
                summary["peak_bandwidth_bytes_per_second"] / info.weight_bytes_per_token
            )
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
