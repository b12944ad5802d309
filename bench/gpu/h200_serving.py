"""The H200 run behind docs/GPU_RESULTS.md's serving section (issue 25, point 7).

In one lease: the CUDA build, the 8B-shaped models (random weights), then for DFlash n_max 8
(synthetic acceptance, labelled: position i accepted with probability 0.881^(i+1)) with its paired
baseline in the same invocation:
- the concurrency protocol at levels 1-32 (input 1,024, output 128 tokens, 3 rounds): aggregate
  tok/s, speedup, the level's tau (acceptance under load), streamed latency percentiles (TTFT,
  TPOT, inter-token, end-to-end) and goodput at TPOT <= 50 ms per level, the data of the
  throughput-per-GPU against tok/s-per-user chart;
- the output-length protocol at 64, 256, 1,024 and 2,048 generated tokens (input 512);
- bench/streaming_decode.py: does streaming (what inter-token latency needs) change the decode
  rate on this GPU (streamed against whole responses on one server, alternating pairs).
Each step writes its result JSON under RESULTS and logs to RESULTS/progress.log (h200_pipeline's
helpers); `PIPELINE=bench/gpu/h200_serving.py bash bench/gpu/h200.sh` starts it and packs RESULTS.
PIPELINE_TINY=1 runs every step on the tiny shape and the CPU build, to check this script.
"""

from __future__ import annotations

import os
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
    log,
    run_config,
    step,
)
from h200_pipeline import stream as stream_output  # noqa: E402

from runner.config import parse_config  # noqa: E402

N_MAX = 8  # the configuration: DFlash n_max 8 on the 8B-shaped target
LEVELS = [1, 2] if TINY else [1, 2, 4, 8, 16, 32]
CONCURRENCY_LENGTHS = (64, 32) if TINY else (1024, 128)
OUTPUT_LENGTHS = [16, 64] if TINY else [64, 256, 1024, 2048]
OUTPUT_INPUT = 64 if TINY else 512


def dflash(shape: str, protocol: dict, *, stream: bool = False):
    return parse_config(
        {
            "target_model": f"{shape}-random-Q4_K_M.gguf",
            "draft_model": f"{shape}-random-dflash-Q8_0.gguf",
            "spec_types": "draft-dflash",
            "n_max": N_MAX,
            "n_gpu_layers": 999,
            "draft_n_gpu_layers": 999,
            "flash_attn": "on",
            "stream": stream,
            "spec_synth_rates": [round(SYNTH_RATE ** (i + 1), 4) for i in range(N_MAX)],
            "protocol": protocol,
        }
    )


def _percentiles(latency: dict | None, name: str) -> str:
    if not latency:
        return f"{name} -"
    figures = latency[name]
    if not figures["n"]:
        return f"{name} -"
    return f"{name} p50/p90/p99 {figures['p50']:.1f}/{figures['p90']:.1f}/{figures['p99']:.1f}"


def _latency_line(latency: dict | None) -> str:
    parts = [_percentiles(latency, n) for n in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")]
    if latency:
        goodput = latency["goodput"]
        parts.append(
            f"goodput(TPOT<={goodput['tpot_ms_objective']:g} ms) {goodput['met']}/"
            f"{goodput['requests']}"
        )
    return "; ".join(parts)


def concurrency_step(engine, shape: str) -> None:
    input_tokens, output_tokens = CONCURRENCY_LENGTHS
    config = dflash(
        shape,
        {
            "name": "concurrency",
            "levels": LEVELS,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "rounds": 3,
            "warmup": 1,
        },
        stream=True,
    )
    result = run_config("8b-dflash8-concurrency", engine, config, with_baseline=True)
    baseline = {p["concurrency"]: p for p in result["baseline"]["points"]}
    for point in result["points"]:
        level = point["concurrency"]
        mine, theirs = point["aggregate_tokens_per_second"], baseline[level]
        log(
            f"  level {level}: aggregate {mine['mean']:.1f} vs baseline "
            f"{theirs['aggregate_tokens_per_second']['mean']:.1f}; speedup {point.get('speedup')};"
            f" tau {point.get('tau')}; acceptance {point.get('acceptance_rate')}"
        )
        log(f"    DFlash   {_latency_line(point.get('latency'))}")
        log(f"    baseline {_latency_line(theirs.get('latency'))}")
    log(f"  crossover_concurrency {result['summary'].get('crossover_concurrency')}")


def output_length_step(engine, shape: str) -> None:
    config = dflash(
        shape,
        {
            "name": "output-length",
            "input_tokens": OUTPUT_INPUT,
            "output_lengths": OUTPUT_LENGTHS,
            "requests": 3,
            "warmup": 1,
        },
    )
    result = run_config("8b-dflash8-output-length", engine, config, with_baseline=True)
    for point in result["points"]:
        generated = (point.get("generated_tokens") or {}).get("mean")
        log(
            f"  {point['output_tokens']} out ({generated} generated): decode "
            f"{point['decode_tokens_per_second']['mean']:.1f} tok/s; speedup {point.get('speedup')}"
            f" [{point.get('speedup_ci95_low')}, {point.get('speedup_ci95_high')}];"
            f" tau {point.get('tau')}"
        )


def streaming_decode_step(engine, shape: str) -> None:
    """bench/streaming_decode.py on the target: streamed against whole responses, one server."""
    argv = [
        sys.executable,
        str(ROOT / "bench" / "streaming_decode.py"),
        "--model",
        str(MODELS / f"{shape}-random-Q4_K_M.gguf"),
        "--input",
        "512",
        "--tokens",
        "64" if TINY else "256",
        "--pairs",
        "4" if TINY else "10",
        "--threads",
        "2" if TINY else "8",
    ]
    if not TINY:
        argv += ["--ngl", "999"]
        # bench/streaming_decode.py locates the cached build of this backend (the one built above).
        os.environ["SPECBOARD_LLAMA_BACKEND"] = "cuda"
    stream_output(argv, RESULTS / "streaming-decode.txt", label="streaming decode")


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    MODELS.mkdir(parents=True, exist_ok=True)
    engine = engine_and_models(SHAPE_8B)
    if engine is None:
        return
    step("8b-dflash8-concurrency", concurrency_step, engine, SHAPE_8B)
    step("8b-dflash8-output-length", output_length_step, engine, SHAPE_8B)
    step("8b-streaming-decode", streaming_decode_step, engine, SHAPE_8B)
    log("PIPELINE FINISHED")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
