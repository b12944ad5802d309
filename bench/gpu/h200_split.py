"""Split modes on a lent GPU machine: the 8B-shaped target with its DFlash draft, paired with its
baseline, at every llama-server split mode the machine's GPU count allows (issue 28).

One GPU: ``--split-mode none`` only (through the config's split_mode, so the new config path and
its flags are exercised end to end). Two or more: none, layer and row, and the two-GPU layout
people use for speculative decoding, the target whole on GPU 0 and the draft on GPU 1
(split_mode none with draft_gpu 1). Each config is one paired run (ABBA rounds, baseline and
DFlash in one result) at depths 512 and 4,096, with synthetic acceptance as in
bench/gpu/h200_pipeline.py (random weights: the runs are labelled synthetic); each result is
RESULTS/8b-split-<variant>-<n>gpu.json, with each GPU's peak memory and energy in its summary.

    PIPELINE=bench/gpu/h200_split.py bash bench/gpu/h200.sh      # on the lent machine
    PIPELINE_TINY=1 python bench/gpu/h200_split.py                # the tiny shape on CPU
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from h200_pipeline import (  # noqa: E402
    MODELS,
    RESULTS,
    SHAPE_8B,
    TINY,
    config_for,
    engine_and_models,
    log,
    run_config,
    step,
)

from runner.config import BenchmarkConfig  # noqa: E402
from runner.provenance import describe_gpus, visible_gpus  # noqa: E402

SPLIT_DEPTHS = [128, 512] if TINY else [512, 4096]

# Each variant's multi-GPU options (runner.config), by the GPUs it needs at least.
VARIANTS: tuple[tuple[str, int, dict], ...] = (
    ("none", 1, {"split_mode": "none"}),
    ("layer", 2, {"split_mode": "layer"}),
    ("row", 2, {"split_mode": "row"}),
    ("none-draft-gpu1", 2, {"split_mode": "none", "draft_gpu": 1}),
)


def variants_for(gpu_count: int) -> list[tuple[str, dict]]:
    """The split variants a machine of gpu_count GPUs can run (one GPU: split_mode none only)."""
    return [(name, placement) for name, needs, placement in VARIANTS if needs <= max(gpu_count, 1)]


def split_config(
    shape: str, placement: dict, *, depths: list[int] = SPLIT_DEPTHS
) -> BenchmarkConfig:
    """The pipeline's DFlash config of the shape (n_max 15, synthetic acceptance, every layer on
    the GPU) with the variant's multi-GPU options."""
    base = config_for(shape, spec=True, n_max=15, depths=depths)
    return BenchmarkConfig.model_validate(base.model_dump() | placement)


def result_name(variant: str, gpu_count: int) -> str:
    return f"8b-split-{variant}-{max(gpu_count, 1)}gpu"


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    MODELS.mkdir(parents=True, exist_ok=True)
    gpus = visible_gpus() or []
    log(f"GPUs: {describe_gpus(gpus)}")
    engine = engine_and_models(SHAPE_8B)
    if engine is None:
        return
    for variant, placement in variants_for(len(gpus)):
        name = result_name(variant, len(gpus))
        step(name, run_config, name, engine, split_config(SHAPE_8B, placement), with_baseline=True)
    log("PIPELINE FINISHED")


if __name__ == "__main__":
    main()
