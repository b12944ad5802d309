"""The real DFlash pair on the lent GPU: the seed's questions asked of a trained draft.

SmolLM2-135M-Instruct (Q4_1) with Specboard's own DFlash draft (training/dflash, Q8_0), every
config measured by the runner with its paired baseline in the same invocation, fully offloaded,
flash attention on. Steps, in order of what the seed asks first; each writes one runner result
JSON under RESULTS and a line to RESULTS/progress.log, and the pipeline stops starting steps
past DEADLINE_S so that its results come back inside one call:

1. categories: acceptance, tau and speedup per task category (suite 2, all 13 categories);
2. n_max 1..15 on the same prompts: which n_max wins, and whether lower acceptance is faster;
3. concurrency 1..16 on suite text: does real acceptance fall under load;
4. depth 512..7168 (token-id prompts: the protocol's, on which any draft accepts less);
5. output lengths 16..256;
6. quality: the two sides' answers to the generated tasks (fidelity and accuracy).

Run by training/dflash/gpu.sh measure; docs/GPU_RESULTS.md reads its files.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from runner.benchmark import run_benchmark  # noqa: E402
from runner.config import parse_config  # noqa: E402
from runner.engines.build import locate  # noqa: E402

KEEP = Path(os.environ.get("KEEP", "/root/keep"))
RESULTS = Path(os.environ.get("RESULTS", KEEP / "measure"))
DRAFT_DIR = Path(os.environ.get("DRAFT_DIR", KEEP / "train"))
MODELS = KEEP / "models"
TARGET = "SmolLM2-135M-Instruct.Q4_1.gguf"
DRAFT = "smollm2-135m-dflash-specboard.Q8_0.gguf"
DEADLINE_S = float(os.environ.get("DEADLINE_S", 520))
ONLY = {s for s in os.environ.get("STEPS", "").split(",") if s}
STARTED = time.monotonic()


def log(message: str) -> None:
    line = f"[{time.monotonic() - STARTED:6.1f} s] {message}"
    print(line, flush=True)
    with (RESULTS / "progress.log").open("a") as progress:
        progress.write(line + "\n")


def config(protocol: dict, *, n_max: int = 15) -> dict:
    return {
        "target_model": TARGET,
        "draft_model": DRAFT,
        "spec_types": "draft-dflash",
        "n_max": n_max,
        "n_gpu_layers": 999,
        "draft_n_gpu_layers": 999,
        "flash_attn": "on",
        "protocol": protocol,
    }


CATEGORIES = {"name": "categories", "output_tokens": 128, "prompts_per_category": 3, "warmup": 1}
NMAX_PROMPTS = {
    "name": "categories",
    "categories": ["code", "math", "writing", "question-answering"],
    "output_tokens": 128,
    "prompts_per_category": 2,
    "warmup": 1,
}
STEPS = [
    ("categories", config(CATEGORIES)),
    *[(f"nmax-{n}", config(NMAX_PROMPTS, n_max=n)) for n in (1, 2, 4, 6, 8, 10, 12, 15)],
    (
        "concurrency",
        config(
            {
                "name": "concurrency",
                "levels": [1, 2, 4, 8, 16],
                "input_tokens": 512,
                "output_tokens": 128,
                "rounds": 2,
                "warmup": 1,
                "prompts": "suite",
            }
        ),
    ),
    (
        "depth",
        config(
            {
                "name": "depth",
                "depths": [512, 2048, 4096, 7168],
                "output_tokens": 128,
                "requests": 3,
                "warmup": 1,
            }
        ),
    ),
    (
        "output-length",
        config(
            {
                "name": "output-length",
                "input_tokens": 256,
                "output_lengths": [16, 64, 256],
                "requests": 3,
                "warmup": 1,
            }
        ),
    ),
    ("quality", config({"name": "quality", "tasks": 24, "max_tokens": 16, "warmup": 1})),
]


def place_models() -> None:
    MODELS.mkdir(parents=True, exist_ok=True)
    for name, source in (
        (TARGET, KEEP / "target.gguf"),
        (DRAFT, next(DRAFT_DIR.glob("*.gguf"), None)),
    ):
        if source is None or not Path(source).exists():
            raise SystemExit(f"{name}: no source file")
        if not (MODELS / name).exists():
            os.link(source, MODELS / name)


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    place_models()
    engine = locate(backend="cuda", log=lambda m: log(f"engine: {m}"))
    log(f"engine {engine.server_path}")
    for name, data in STEPS:
        if ONLY and name not in ONLY:
            continue
        if time.monotonic() - STARTED > DEADLINE_S:
            log(f"skip {name}: past the deadline")
            continue
        log(f"start {name}")
        try:
            result = run_benchmark(
                parse_config(data), models_dir=MODELS, engine=engine, with_baseline=True
            )
        except Exception as error:  # noqa: BLE001 - one failed step must not lose the others
            log(f"FAILED {name}: {error}")
            (RESULTS / f"{name}.error.txt").write_text(traceback.format_exc())
            continue
        dumped = result.model_dump(mode="json")
        (RESULTS / f"result-{name}.json").write_text(json.dumps(dumped))
        summary = dumped.get("summary", {})
        log(
            f"done {name}: tau {summary.get('tau')}, acceptance {summary.get('acceptance_rate')}, "
            f"speedup {summary.get('speedup')}"
        )
    log("PIPELINE FINISHED")


if __name__ == "__main__":
    main()
