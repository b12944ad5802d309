"""Runner results for tests, built and checked by the runner's own result model."""

from __future__ import annotations

import hashlib
from pathlib import Path

from leaderboard.models import Config, ModelFile
from runner.config import BenchmarkConfig
from runner.gguf.inspect import inspect_model
from runner.results import BenchmarkResult
from runner.stats import summarize


def _output_hash(label: str) -> str:
    """A test's output label ("a", "out-3") as the sha256 a runner record carries."""
    if len(label) == 64 and all(c in "0123456789abcdef" for c in label):
        return label
    return hashlib.sha256(label.encode()).hexdigest()


def _model_info(reference: str, models_dir: Path) -> dict:
    """A model's provenance entry: its registered metadata, or its file read by the runner."""
    try:
        row = ModelFile.objects.filter(path=reference).first()
    except RuntimeError:  # a test without database access (the GPU side)
        row = None
    if row is not None:
        return row.metadata | {"path": row.path, "sha256": row.sha256}
    return inspect_model(models_dir / reference).as_dict() | {"path": reference}


def fake_result(
    config: BenchmarkConfig | str,
    decode: list[float],
    *,
    models_dir: Path,
    draft: tuple[int, int] = (0, 0),
    tau: float | None = None,
    outputs: list[str] | None = None,
    release: str = "b11434",
    target_sha256: str | None = None,
) -> dict:
    """A runner result for a config (or a stored config's key) with the given per-request decode
    tok/s, built and checked by the runner's own result model, as JSON data."""
    if isinstance(config, str):
        config = BenchmarkConfig.from_canonical(Config.objects.get(key=config).canonical)
    outputs = outputs or [f"out-{i}" for i in range(len(decode))]
    count = max(len(decode), 1)
    requests = [
        {
            "phase": "measure", "point": 0, "input_tokens": None, "output_tokens_requested": 64,
            "prompt_n": 20, "prompt_ms": 5.0, "predicted_n": 64, "predicted_ms": 64_000 / value,
            "decode_tokens_per_second": value, "server_predicted_per_second": value * 63 / 64,
            "end_to_end_tokens_per_second": value * 0.9, "ttft_ms": 6.0,
            "ttft_source": "server prompt time", "wall_ms": 70_000 / value,
            "draft_n": draft[0] // count, "draft_n_accepted": draft[1] // count,
            "verify_steps": 10, "tau": tau, "accepted_per_position": [],
            "output_sha256": _output_hash(outputs[i]), "distinct_4gram_ratio": 0.9,
            "stopped_early": False, "index": i, "first_divergence": None,
        }
        for i, value in enumerate(decode)
    ]  # fmt: skip
    target = _model_info(config.target_model, models_dir)
    if target_sha256:
        target["sha256"] = target_sha256
    engine = {
        "server_path": "/x",
        "release": release,
        "backend": "cuda",
        "build_flags": [],
        "source": "built",
    }
    result = {
        "config": config.canonical(),
        "config_key": config.key,
        "synthetic": config.is_synthetic,
        "summary": {
            "decode_tokens_per_second": summarize(decode),
            "end_to_end_tokens_per_second": summarize([v * 0.9 for v in decode]),
            "ttft_ms": summarize([6.0] * len(decode)),
            "acceptance_rate": draft[1] / draft[0] if draft[0] else None,
            "tau": tau,
            "draft_tokens": draft[0],
            "draft_accepted": draft[1],
            "verify_steps": 10 * len(decode),
            "acceptance_by_position": None,
            "peak_memory_bytes": 123_456_789,
            "memory_kind": "gpu",
            "degenerate": False,
            "gpu_seconds": 12.5,
            "engine_seconds": 12.5,
            "load_seconds": 1.0,
            "harness_overhead_seconds": 0.1,
            "speedup": None,
            "lossless": None,
            "baseline_decode_tokens_per_second": None,
            "lossless_note": None,
        },
        "points": [],
        "requests": requests,
        "provenance": {
            "argv": ["llama-server", "-m", "tiny-qwen3.gguf"],
            "command": "llama-server -m tiny-qwen3.gguf --spec-type draft-simple",
            "models": {
                "target": target,
                "draft": _model_info(config.draft_model, models_dir)
                if config.draft_model
                else None,
            },
            "engine_log_tail": "",
            "engine": engine,
            "system": {
                "gpu": "H200",
                "driver": "580.1",
                "cuda": "13.0",
                "hostname": "gpu-1",
            },
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T00:01:00+00:00",
            "token_budget": {
                "requests": len(decode),
                "prompt_tokens": 20 * len(decode),
                "generated_tokens": 64 * len(decode),
                "total_tokens": 84 * len(decode),
            },
        },
        "schema_version": 1,
        "engine": engine,
        "baseline": None,
    }
    return BenchmarkResult.model_validate(result).model_dump(mode="json")


def result_file(make_result, config: dict, decode: list[float]) -> dict:
    """A runner result file of a config, as `python -m runner run --out` writes it."""
    parsed = BenchmarkConfig.model_validate(config)
    outputs = [hashlib.sha256(f"out-{i}".encode()).hexdigest() for i in range(len(decode))]
    return make_result(parsed, decode, outputs=outputs)
