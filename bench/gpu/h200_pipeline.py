"""The H200 run behind docs/GPU_RESULTS.md: CUDA build, shape-real models, sweeps, cross-checks.

Every step writes its result under RESULTS (one JSON per runner invocation, llama-bench's JSON,
the fidelity bench's text) and appends to RESULTS/progress.log; a failed step is logged and the
pipeline goes on. bench/gpu/h200.sh starts it in the background and collects RESULTS.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from runner.benchmark import run_benchmark  # noqa: E402
from runner.config import parse_config  # noqa: E402
from runner.engines.build import llama_bench, locate  # noqa: E402
from runner.errors import RunnerError  # noqa: E402

RESULTS = Path(os.environ.get("RESULTS", "/tmp/gpu-results"))
MODELS = Path(os.environ.get("MODELS", "/tmp/gpu-models"))
# PIPELINE_TINY=1 runs the same steps on the tiny shape and the CPU build, to check this script.
TINY = bool(os.environ.get("PIPELINE_TINY"))
DEPTHS = [128, 512] if TINY else [512, 4096, 12288, 36864]
SHAPE_8B, SHAPE_27B = ("tiny", "tiny") if TINY else ("qwen3-8b", "qwen3-27b")
BACKEND = "cpu" if TINY else "cuda"
# Synthetic acceptance: position i (0-based) is accepted with probability R ** (i + 1), the
# same profile at every n_max. R = 0.881 gives tau = 1 + sum(R ** k, k = 1..15) = 7.3 at n_max 15,
# the seed's DFlash tau, and acceptance falls as n_max grows, as in the seed (43% at 12).
SYNTH_RATE = 0.881
STARTED = time.monotonic()


def log(message: str) -> None:
    line = f"[{time.monotonic() - STARTED:7.1f} s] {message}"
    print(line, flush=True)
    with (RESULTS / "progress.log").open("a") as progress:
        progress.write(line + "\n")


ONLY = {n for n in os.environ.get("PIPELINE_ONLY", "").split(",") if n}


def step(name: str, function, *args, **kwargs):
    if ONLY and name not in ONLY and name != "engine":
        return None
    log(f"start {name}")
    try:
        value = function(*args, **kwargs)
        log(f"done {name}")
        return value
    except Exception as error:  # noqa: BLE001 - one failed step must not lose the others
        log(f"FAILED {name}: {error}")
        (RESULTS / f"{name}.error.txt").write_text(traceback.format_exc())
        return None


def config_for(shape: str, *, spec: bool, n_max: int = 15, depths=DEPTHS, requests=3, bs=None):
    data = {
        "target_model": f"{shape}-random-Q4_K_M.gguf",
        "n_gpu_layers": 999,
        "flash_attn": "on",
        "backend_sampling": bs,
        "protocol": {
            "name": "depth",
            "depths": depths,
            "output_tokens": 256,
            "requests": int(os.environ.get("PIPELINE_REQUESTS", requests)),
            "warmup": 1,
        },
    }
    if spec:
        data |= {
            "draft_model": f"{shape}-random-dflash-Q8_0.gguf",
            "spec_types": "draft-dflash",
            "n_max": n_max,
            "draft_n_gpu_layers": 999,
            "spec_synth_rates": [round(SYNTH_RATE ** (i + 1), 4) for i in range(n_max)],
        }
    return parse_config(data)


def run_config(name: str, engine, config, *, with_baseline: bool = False) -> dict:
    def progress(event: dict) -> None:
        if event["done"] % 4 == 0 or event["done"] == event["total"]:
            log(f"  {name}: {event['phase']} {event['done']}/{event['total']}")

    try:
        measured = run_benchmark(
            config, models_dir=MODELS, engine=engine, with_baseline=with_baseline, progress=progress
        )
    except RunnerError:
        if not config.effective_backend_sampling:
            raise
        # Backend sampling is experimental in b11434: if it fails, measure without it, labelled.
        log(f"  {name}: failed with -bs, retrying without")
        config = config.model_copy(update={"backend_sampling": False})
        measured = run_benchmark(
            config, models_dir=MODELS, engine=engine, with_baseline=with_baseline, progress=progress
        )
    result = measured.model_dump(mode="json")
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1))
    summary = result["summary"]
    points = ", ".join(
        f"{p['input_tokens']}: {p['decode_tokens_per_second']['mean']:.1f}"
        + (f" ({p['speedup']:.2f}x)" if p.get("speedup") else "")
        for p in result["points"]
    )
    log(f"  {name}: {points}; tau {summary['tau']}; peak mem {summary['peak_memory_bytes']}")
    return result


def llama_bench_step(name: str, engine, shape: str) -> None:
    rows = llama_bench(
        engine,
        MODELS / f"{shape}-random-Q4_K_M.gguf",
        depths=DEPTHS,
        tokens=128,
        reps=2,
        n_gpu_layers=999,
        timeout_s=900,
    )
    (RESULTS / f"{name}.json").write_text(json.dumps(rows, indent=2))
    for row in rows:
        log(f"  {name}: depth {row.get('n_depth')}: {row['avg_ts']:.1f} tok/s")


def fidelity(
    engine,
    shape: str,
    *,
    depths=("512", "4096"),
    tokens: str = "256",
    reps: str = "3",
    rounds: str = "1",
    option_sets: str = "all",
) -> None:
    """bench/runner_fidelity.py on the shape's target; each line is logged as it is printed."""
    argv = [
        sys.executable,
        str(ROOT / "bench" / "runner_fidelity.py"),
        "--server",
        engine.server_path,
        "--model",
        str(MODELS / f"{shape}-random-Q4_K_M.gguf"),
        "--depths",
        *depths,
        "--ngl",
        "999",
        "--fa",
        "on",
        "--tokens",
        tokens,
        "--reps",
        reps,
        "--rounds",
        rounds,
        "--option-sets",
        option_sets,
        "--threads",
        "8",
    ]
    stream(argv, RESULTS / f"fidelity-{shape}.txt", label=f"fidelity {shape}")


def stream(argv: list[str], record: Path, *, label: str, timeout_s: float = 1800) -> None:
    """Run a bench script, writing its output to `record` and the log line by line as it comes;
    past `timeout_s` (a hung engine) it is killed, with what it printed kept."""
    with record.open("w") as out:
        # Its own process group, so a kill takes the engines it started (llama-bench,
        # llama-server) with it rather than leaving them on the GPU.
        process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,
        )

        def kill() -> None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout_s, kill)
        timer.start()
        try:
            for line in process.stdout:
                out.write(line)
                out.flush()
                log(f"  {label}: {line.rstrip()}")
            code = process.wait(timeout=60)
        finally:
            timer.cancel()
            if process.poll() is None:
                kill()
        if code != 0:
            raise RuntimeError(
                f"{Path(argv[1]).name} exited with {code} (killed past {timeout_s} s if negative)"
            )


def start_model_writer(shapes) -> subprocess.Popen:
    """bench/gpu/make_models.py writing these shapes into MODELS in the background."""
    log("writing models in the background")
    argv = [sys.executable, str(ROOT / "bench" / "gpu" / "make_models.py"), str(MODELS)]
    for shape in sorted(shapes):
        argv += ["--shape", shape]
    return subprocess.Popen(
        argv, stdout=(RESULTS / "make_models.log").open("w"), stderr=subprocess.STDOUT
    )


def engine_and_models(shape: str, *, backend: str = BACKEND, before_engine=None):
    """The engine (built if need be) once the shape's target and DFlash draft are on disk: the
    models are written in the background while the engine builds, and `before_engine` (a step
    of the caller's) runs meanwhile. None, logged, when the build or the writer failed."""
    target = MODELS / f"{shape}-random-Q4_K_M.gguf"
    draft = MODELS / f"{shape}-random-dflash-Q8_0.gguf"
    writer = None
    if not (target.exists() and draft.exists()):
        writer = start_model_writer({shape})
    if before_engine is not None:
        before_engine()
    engine = step("engine", locate, backend=backend, log=log)
    if engine is None:
        return None
    while not (target.exists() and draft.exists()):
        if writer is None or (writer.poll() is not None and writer.returncode != 0):
            log("model writer failed")
            return None
        time.sleep(2)
    if writer is not None:
        writer.wait()
    log(f"{shape} models ready")
    return engine


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    MODELS.mkdir(parents=True, exist_ok=True)
    wanted = [
        MODELS / f"{shape}-random-{suffix}.gguf"
        for shape in {SHAPE_8B, SHAPE_27B}
        for suffix in ("Q4_K_M", "dflash-Q8_0")
    ]
    writer = None
    if not all(path.exists() for path in wanted):
        writer = start_model_writer({SHAPE_8B, SHAPE_27B})
    engine = step("engine", locate, backend=BACKEND, log=log)
    if engine is None:
        return
    (RESULTS / "engine.json").write_text(json.dumps(engine.as_dict(), indent=1))
    while (
        not (MODELS / f"{SHAPE_8B}-random-dflash-Q8_0.gguf").exists()
        or not (MODELS / f"{SHAPE_27B}-random-Q4_K_M.gguf").exists()
    ):
        if writer is None or (writer.poll() is not None and writer.returncode != 0):
            log("model writer failed")
            return
        time.sleep(2)
    log("8B models ready")

    step(
        "8b-dflash15-depth",
        run_config,
        "8b-dflash15-depth",
        engine,
        config_for(SHAPE_8B, spec=True, n_max=15),
        with_baseline=True,
    )
    step(
        "8b-dflash12-depth",
        run_config,
        "8b-dflash12-depth",
        engine,
        config_for(SHAPE_8B, spec=True, n_max=12),
    )
    for n_max in (1, 2, 4, 8, 12, 15):
        step(
            f"8b-nmax{n_max}",
            run_config,
            f"8b-nmax{n_max}",
            engine,
            config_for(SHAPE_8B, spec=True, n_max=n_max, depths=[512], requests=3),
        )
    step("8b-llama-bench", llama_bench_step, "8b-llama-bench", engine, SHAPE_8B)
    step("fidelity-8b", fidelity, engine, SHAPE_8B)

    if writer is not None:
        writer.wait()
    log("27B models ready")
    step(
        "27b-dflash15-depth",
        run_config,
        "27b-dflash15-depth",
        engine,
        config_for(SHAPE_27B, spec=True, n_max=15),
        with_baseline=True,
    )
    step(
        "27b-dflash12-depth",
        run_config,
        "27b-dflash12-depth",
        engine,
        config_for(SHAPE_27B, spec=True, n_max=12),
    )
    step("27b-llama-bench", llama_bench_step, "27b-llama-bench", engine, SHAPE_27B)
    log("PIPELINE FINISHED")


if __name__ == "__main__":
    main()
