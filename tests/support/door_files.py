"""Result files for the door (runner.door): an honest one, and for each rule one that breaks only it.

Each is built by the runner's own functions (``tests.support.results.fake_result``: request
records first, every figure derived from them) and then checked by the runner's result model,
so it passes every arithmetic and self-consistency check: only the door can refuse it. The
honest file is a draft-simple config whose target is a 27B-sized file (16.9 GB, 15.2 GB read a
step) wholly on the GPU, decoding 50 tok/s at 300 W on one H200; its ceiling there is
4.8 TB/s / 15.2 GB = 316 tok/s.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from runner.config import BenchmarkConfig
from runner.energy import energy_figures
from runner.engines.server import display_command
from runner.results import BenchmarkResult
from tests.support.results import fake_result, implied_argv

CONFIG = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-qwen3.gguf",
    "spec_types": ["draft-simple"],
    "n_max": 4,
    "n_gpu_layers": 999,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}
# The 27B-sized target the honest file measured (qwen3-27b of docs/gpu-results/h200-run2).
TARGET = {
    "path": "/models/qwen3-27b-Q4_K_M.gguf",
    "sha256": "27" * 32,
    "size_bytes": 16_876_316_768,
    "architecture": "qwen3",
    "block_count": 64,
    "weight_bytes_per_token": 15_200_000_000,
    "test_weights": False,
}
HONEST_DECODE = 50.0
HONEST_WATTS = 300.0
HONEST_PEAK_BYTES = 20_000_000_000

RULES = (
    "physics.decode_above_roofline",
    "physics.energy_below_idle",
    "physics.peak_memory_below_model_bytes",
    "provenance.argv_mismatch",
    "provenance.system_mismatch",
    "completeness.missing_request",
    "completeness.short_generation",
)


def _with_target(result: dict[str, Any], config: BenchmarkConfig) -> dict[str, Any]:
    """The result with the 27B target in its provenance and the command that implies."""
    models = result["provenance"]["models"] | {"target": dict(TARGET)}
    argv = implied_argv(config, models)
    result["provenance"] |= {"models": models, "argv": argv, "command": display_command(argv)}
    return result


def _with_energy(result: dict[str, Any], watts: float) -> dict[str, Any]:
    """Every measured request drawing `watts` over its wall time, the summary derived again."""
    for record in result["requests"]:
        record["energy_joules"] = watts * record["wall_ms"] / 1000.0
    result["summary"] |= energy_figures(result["requests"])
    return result


def door_file(
    rule: str | None,
    *,
    models_dir: Path,
    config: BenchmarkConfig | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The honest result (rule None) or one that breaks only `rule` of a config (CONFIG unless
    given), checked by the runner's result model, as JSON data."""
    parsed = (
        config
        if isinstance(config, BenchmarkConfig)
        else BenchmarkConfig.model_validate(config or CONFIG)
    )
    runs = parsed.protocol.runs
    decode = [HONEST_DECODE] * runs
    options: dict[str, Any] = {}
    if rule == "physics.decode_above_roofline":
        # A 27B model at 10,000 tok/s on one H200: 32x its ceiling.
        decode = [10_000.0] * runs
    elif rule == "completeness.missing_request":
        decode, options = [HONEST_DECODE], {"complete": False}
    elif rule == "completeness.short_generation":
        options = {"tokens": 8}
    result = fake_result(parsed, decode, models_dir=models_dir, **options)
    result = _with_target(copy.deepcopy(result), parsed)
    watts = 0.075 if rule == "physics.energy_below_idle" else HONEST_WATTS
    result = _with_energy(result, watts)
    peak = 9_000_000_000 if rule == "physics.peak_memory_below_model_bytes" else HONEST_PEAK_BYTES
    result["summary"]["peak_memory_bytes"] = peak
    if rule == "provenance.argv_mismatch":
        # A synthetic run relabelled as real: the config lost spec_synth_rates, the command not.
        argv = result["provenance"]["argv"] + ["--spec-synth-rates", "0.9,0.8,0.7,0.6"]
        result["provenance"] |= {"argv": argv, "command": display_command(argv)}
    if rule == "provenance.system_mismatch":
        result["provenance"]["system"] |= {"gpu": "RTX 3090", "gpu_count": 1}
    return BenchmarkResult.model_validate(result).model_dump(mode="json")
