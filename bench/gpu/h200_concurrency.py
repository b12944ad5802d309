"""The H200 run behind docs/GPU_RESULTS.md's concurrency section (issue 15).

In one lease: NVML's bandwidth and energy probe, the CUDA build, the 8B-shaped models, the
concurrency protocol for the 8B-shaped target with its DFlash draft (synthetic acceptance,
labelled) and its paired baseline at levels 1 to 16 with energy and the roofline, and the
runner's fidelity against llama-bench at depths 512, 4096 and 36864 on the same build.
Each step writes under RESULTS and logs to RESULTS/progress.log (h200_pipeline's helpers);
bench/gpu/h200_concurrency.sh starts it in the background and packs RESULTS.
PIPELINE_TINY=1 runs every step on the tiny shape and the CPU build, to check this script.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from h200_pipeline import (  # noqa: E402
    MODELS,
    RESULTS,
    ROOT,
    SHAPE_8B,
    SYNTH_RATE,
    TINY,
    engine_and_models,
    fidelity,
    log,
    run_config,
    step,
)

from runner.config import parse_config  # noqa: E402

LEVELS = [1, 2] if TINY else [1, 2, 4, 8, 16]
LENGTHS = (64, 32) if TINY else (512, 256)
FIDELITY_DEPTHS = ["128", "512"] if TINY else ["512", "4096", "36864"]
N_MAX = 12  # the seed's best n_max


def concurrency_config(shape: str, *, rounds: int = 3):
    input_tokens, output_tokens = LENGTHS
    return parse_config(
        {
            "target_model": f"{shape}-random-Q4_K_M.gguf",
            "draft_model": f"{shape}-random-dflash-Q8_0.gguf",
            "spec_types": "draft-dflash",
            "n_max": N_MAX,
            "n_gpu_layers": 999,
            "draft_n_gpu_layers": 999,
            "flash_attn": "on",
            "spec_synth_rates": [round(SYNTH_RATE ** (i + 1), 4) for i in range(N_MAX)],
            "protocol": {
                "name": "concurrency",
                "levels": LEVELS,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "rounds": rounds,
                "warmup": 1,
            },
        }
    )


def concurrency_step(engine, shape: str) -> None:
    result = run_config(
        "8b-dflash12-concurrency", engine, concurrency_config(shape), with_baseline=True
    )
    summary = result["summary"]
    baseline = {p["concurrency"]: p for p in result["baseline"]["points"]}
    for point in result["points"]:
        level = point["concurrency"]
        mine = point["aggregate_tokens_per_second"]
        theirs = baseline[level]["aggregate_tokens_per_second"]
        log(
            f"  level {level}: aggregate {mine['mean']:.1f} [{mine['ci95_low']}, {mine['ci95_high']}]"
            f" vs baseline {theirs['mean']:.1f}; speedup {point.get('speedup')}"
        )
    log(f"  crossover_concurrency {summary.get('crossover_concurrency')}")
    log(f"  energy: {summary.get('joules_per_token')} J/token; roofline {summary.get('roofline')}")
    log(f"  baseline roofline {result['baseline']['summary'].get('roofline')}")


def fidelity_step(engine, shape: str) -> None:
    fidelity(
        engine,
        shape,
        depths=FIDELITY_DEPTHS,
        tokens="128" if TINY else "256",
        reps=os.environ.get("PIPELINE_FIDELITY_REPS", "3"),
        rounds=os.environ.get("PIPELINE_FIDELITY_ROUNDS", "1"),
        option_sets=os.environ.get("PIPELINE_FIDELITY_OPTIONS", "all"),
    )


def probe_step(model: Path | None) -> None:
    argv = [sys.executable, str(ROOT / "bench" / "gpu" / "energy_probe.py")]
    if model is not None:
        argv += ["--model", str(model)]
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    (RESULTS / "energy_probe.txt").write_text(completed.stdout + completed.stderr[-3000:])
    for line in completed.stdout.splitlines():
        log(f"  probe: {line}")


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    MODELS.mkdir(parents=True, exist_ok=True)
    engine = engine_and_models(SHAPE_8B, before_engine=lambda: step("probe", probe_step, None))
    if engine is None:
        return
    step("probe-model", probe_step, MODELS / f"{SHAPE_8B}-random-Q4_K_M.gguf")
    step("8b-dflash12-concurrency", concurrency_step, engine, SHAPE_8B)
    step("fidelity-8b", fidelity_step, engine, SHAPE_8B)
    log("PIPELINE FINISHED")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
