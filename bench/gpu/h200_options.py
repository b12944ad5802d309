"""Which llama-server options close the runner's last few percent to llama-bench (H200, one lease).

The runner decodes 3-4% below llama-bench's bare loop on the H200 (docs/GPU_RESULTS.md). This
builds the CUDA engine, writes the 8B-shaped target and runs bench/gpu/sampling_probe.py at depth
512 with the runner's own server options and variants of them, each a server of its own, over
rounds in alternating order, every set's tokens compared with the runner's. A variant is worth a
change of the runner's defaults only with the same tokens and a gain well above the rounds'
spread. bench/gpu/h200.sh starts it (PIPELINE=bench/gpu/h200_options.py) and packs RESULTS.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from h200_pipeline import (
    MODELS,
    RESULTS,
    ROOT,
    SHAPE_8B,
    TINY,
    log,
    start_model_writer,
    step,
    stream,
)  # noqa: E402,I001

from runner.engines.build import locate  # noqa: E402

# The runner's own llama-server options for a plain config (runner/engines/server.py), then one
# change each; the last combines the cheap ones.
RUNNER = "-bs -np 1 --metrics -ctk f16 -ctv f16 -t 8" + (" --no-repack" if TINY else "")
VARIANTS = {
    "runner": "",
    "no-perf": "--no-perf",
    "cache-ram-0": "-cram 0",
    "no-cont-batching": "-nocb",
    "poll-100": "--poll 100",
    "prio-2": "--prio 2",
    "threads-2": "-t 2",
    "combined": "--no-perf -cram 0 --prio 2",
}


def probe_step(engine) -> None:
    argv = [
        sys.executable, str(ROOT / "bench" / "gpu" / "sampling_probe.py"),
        "--server", engine.server_path, "--model", str(MODELS / f"{SHAPE_8B}-random-Q4_K_M.gguf"),
        "--depth", "64" if TINY else "512", "--tokens", "32" if TINY else "256",
        "--reps", os.environ.get("PROBE_REPS", "3"), "--rounds", os.environ.get("PROBE_ROUNDS", "2"),
        "--ngl", "0" if TINY else "999", "--bodies", "runner", "--options",
        *(f"{name}={RUNNER} {extra}".strip() for name, extra in VARIANTS.items()),
    ]  # fmt: skip
    stream(argv, RESULTS / "options-probe.txt", label="options")


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    MODELS.mkdir(parents=True, exist_ok=True)
    target = MODELS / f"{SHAPE_8B}-random-Q4_K_M.gguf"
    writer = None if target.exists() else start_model_writer({SHAPE_8B})
    engine = step("engine", locate, backend="cpu" if TINY else "cuda", log=log)
    if engine is None:
        return
    while not target.exists() or (writer is not None and writer.poll() is None):
        if writer is not None and writer.poll() not in (None, 0):
            log("model writer failed")
            return
        time.sleep(2)
    log("8B model ready")
    step("options-probe", probe_step, engine)
    log("PIPELINE FINISHED")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
