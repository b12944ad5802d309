"""Runner results of the concurrency and categories protocols for the site's tests.

Built from request records the way the runner builds them: points and summaries come from
`runner.stats` over the records, and the whole result (with its paired baseline section) is
checked by the runner's own result model, so a test's figures are what the evidence says.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from runner import stats
from runner.config import BenchmarkConfig
from runner.energy import energy_figures
from runner.engines.server import display_command
from runner.pairing import combined_speedup, crossover_concurrency, point_speed
from runner.results import BenchmarkResult
from runner.roofline import derived_roofline
from tests.support.results import _model_info, implied_argv

TARGET = "tiny-qwen3.gguf"
DRAFT = "tiny-dflash.gguf"
OUTPUT_TOKENS = 32


def concurrency_config(levels: list[int], **options: Any) -> BenchmarkConfig:
    """A draft-dflash config of the tiny target on the concurrency protocol."""
    return BenchmarkConfig.model_validate(
        {
            "target_model": TARGET,
            "draft_model": DRAFT,
            "spec_types": ["draft-dflash"],
            "n_max": 4,
            "protocol": {
                "name": "concurrency",
                "levels": levels,
                "input_tokens": 64,
                "output_tokens": OUTPUT_TOKENS,
                "rounds": 2,
            },
        }
        | options
    )


def categories_config(categories: list[str], **options: Any) -> BenchmarkConfig:
    """A draft-dflash config of the tiny target on the categories protocol."""
    return BenchmarkConfig.model_validate(
        {
            "target_model": TARGET,
            "draft_model": DRAFT,
            "spec_types": ["draft-dflash"],
            "n_max": 4,
            "protocol": {
                "name": "categories",
                "categories": categories,
                "output_tokens": OUTPUT_TOKENS,
                "prompts_per_category": 2,
            },
        }
        | options
    )


def _record(index: int, point: int, decode: float, **fields: Any) -> dict[str, Any]:
    draft_n, accepted = fields.pop("draft", (0, 0))
    # The tokens after the first over the generation time (runner.stats.decode_rate), inside
    # a wall time that holds the prompt's 5 ms, the generation and the time to first token.
    predicted_ms = (OUTPUT_TOKENS - 1) * 1000 / decode
    wall_ms = fields.pop("wall_ms", None) or 7.0 + point + predicted_ms
    return {
        "phase": "measure", "point": point, "input_tokens": fields.pop("input_tokens", None),
        "output_tokens_requested": OUTPUT_TOKENS, "prompt_n": 64, "prompt_ms": 5.0,
        "predicted_n": OUTPUT_TOKENS, "predicted_ms": predicted_ms,
        "decode_tokens_per_second": decode, "server_predicted_per_second": decode,
        "end_to_end_tokens_per_second": OUTPUT_TOKENS * 1000 / wall_ms, "ttft_ms": 6.0 + point,
        "ttft_source": "server prompt time", "wall_ms": wall_ms,
        "draft_n": draft_n, "draft_n_accepted": accepted, "verify_steps": 8 if draft_n else 0,
        "tau": 1 + accepted / 8 if draft_n else None, "accepted_per_position": [],
        "output_sha256": hashlib.sha256(f"out-{point}-{index}".encode()).hexdigest(),
        "distinct_4gram_ratio": 0.9, "stopped_early": False, "index": index,
        "first_divergence": None, **fields,
    }  # fmt: skip


def concurrency_records(
    config: BenchmarkConfig, aggregates: list[float], *, acceptance: float | None
) -> list[dict[str, Any]]:
    """Records whose rounds give, per level, about the given aggregate tok/s (every round the
    protocol plans: the first slightly slower, the second slightly faster, any more at it, so
    each level has an interval)."""
    protocol = config.protocol
    factors = ([0.98, 1.02] + [1.0] * max(protocol.rounds - 2, 0))[: protocol.rounds]
    records: list[dict[str, Any]] = []
    for point, (level, aggregate) in enumerate(zip(protocol.levels, aggregates, strict=True)):
        for round_index, factor in enumerate(factors):
            # A round's aggregate is its tokens over its slowest request's wall time.
            wall_ms = level * OUTPUT_TOKENS * 1000 / (aggregate * factor)
            for _ in range(level):
                drafted = 16 if acceptance is not None else 0
                records.append(
                    _record(
                        len(records),
                        point,
                        # Generation inside the wall time, after the prompt's 5 ms.
                        decode=(OUTPUT_TOKENS - 1) * 1000 / (wall_ms - 7.0) * 1.1,
                        input_tokens=protocol.input_tokens,
                        wall_ms=wall_ms,
                        round=round_index,
                        concurrency=level,
                        draft=(drafted, round(drafted * (acceptance or 0))),
                        # A wave's shared counters measure no one request (runner.engines.concurrent).
                        **({"tau": None} if level > 1 else {}),
                    )
                )
    return records


def category_records(
    config: BenchmarkConfig, decode: dict[str, float], acceptance: dict[str, float] | None
) -> list[dict[str, Any]]:
    """Two records a category, with the given decode tok/s (and acceptance) per category."""
    records: list[dict[str, Any]] = []
    for point, name in enumerate(config.protocol.categories):
        for factor in (0.97, 1.03):
            drafted = 20 if acceptance is not None else 0
            accepted = round(drafted * (acceptance or {}).get(name, 0))
            # Ten verify steps a request: a category's two requests reach the evidence threshold
            # (verdicts.evidence: 20 steps), so its speedup is a verdict, not an anecdote.
            steps = {"verify_steps": 10, "tau": 1 + accepted / 10} if drafted else {}
            records.append(
                _record(
                    len(records),
                    point,
                    decode=decode[name] * factor,
                    category=name,
                    draft=(drafted, accepted),
                    **steps,
                )
            )
    return records


def _summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures the records decide, as the runner's summary has them, and the rest."""
    return stats.pooled_figures(records) | {
        "peak_memory_bytes": 123_456_789,
        "memory_kind": "gpu",
        "gpu_seconds": 3.0,
        "engine_seconds": 3.0,
        "load_seconds": 1.0,
    }


def _section(config: BenchmarkConfig, records: list[dict], models_dir: Path) -> dict[str, Any]:
    models = {
        "target": _model_info(config.target_model, models_dir),
        "draft": _model_info(config.draft_model, models_dir) if config.draft_model else None,
    }
    return {
        "config": config.canonical(),
        "config_key": config.key,
        "synthetic": config.is_synthetic,
        "summary": _summary(records),
        "points": stats.depth_points(config, records),
        "requests": records,
        "provenance": {
            "argv": implied_argv(config, models),
            "command": display_command(implied_argv(config, models)),
            "models": models,
            "engine_log_tail": "",
        },
    }


def protocol_result(
    config: BenchmarkConfig,
    records: list[dict[str, Any]],
    baseline_records: list[dict[str, Any]] | None,
    *,
    models_dir: Path,
    joules_per_request: float | None = None,
    bandwidth: int | None = None,
) -> dict[str, Any]:
    """A whole result of a config with its paired baseline section (when given records), checked
    by the runner's result model, as JSON data. `joules_per_request` gives every request that
    energy (NVML's), `bandwidth` the GPU's peak bytes a second (the roofline), as the runner
    records them; without either the result has no energy or roofline, as on a CPU host."""
    engine = {"server_path": "/x", "release": "b11434", "backend": "cuda", "build_flags": []}
    if joules_per_request is not None:
        for record in records + (baseline_records or []):
            record["energy_joules"] = joules_per_request
    main = _section(config, records, models_dir)
    baseline = (
        _section(config.baseline(), baseline_records, models_dir) if baseline_records else None
    )
    baseline_mean = baseline["summary"]["decode_tokens_per_second"]["mean"] if baseline else None
    speedups = [
        stats.ratio(point_speed(point), point_speed(reference))
        for point, reference in zip(
            main["points"], baseline["points"] if baseline else [], strict=False
        )
    ]
    # The speedups as the runner pairs them (runner.evidence refuses any other).
    for point, speedup in zip(main["points"], speedups, strict=False):
        point["speedup"] = speedup
    main["summary"] |= {
        "speedup": combined_speedup(speedups),
        "lossless": None,
        "baseline_decode_tokens_per_second": baseline_mean,
        "lossless_note": None,
        "crossover_concurrency": crossover_concurrency(main["points"][: len(speedups)], speedups)
        if baseline
        else None,
    }
    # The quality protocol's figures, from the records' scores (runner.stats), where they have.
    for section in (main, baseline) if baseline else (main,):
        if (accuracy := stats.accuracy_figures(section["requests"])) is not None:
            section["summary"]["quality"] = accuracy
    if baseline and (difference := stats.quality_difference(records, baseline_records or [])):
        main["summary"]["quality_difference"] = difference
    # No GPU named: these results are recorded on kinds of every name (runner.door).
    system = {"driver": "580.1", "cuda": "13.0", "hostname": "g1"}
    if bandwidth is not None:
        system["gpu_peak_bandwidth_bytes_per_second"] = bandwidth
    main["provenance"] |= {
        "engine": engine,
        "system": system,
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:01:00+00:00",
        "token_budget": {
            "requests": len(records),
            "prompt_tokens": 64 * len(records),
            "generated_tokens": OUTPUT_TOKENS * len(records),
            "total_tokens": (64 + OUTPUT_TOKENS) * len(records),
        },
    }
    result = main | {"schema_version": 1, "engine": engine, "baseline": baseline}
    for section in (main, baseline) if baseline else (main,):
        if joules_per_request is not None:
            section["summary"] |= energy_figures(section["requests"])
        section["summary"]["roofline"] = derived_roofline(section, run=result)
    return BenchmarkResult.model_validate(result).model_dump(mode="json", exclude_unset=True)
