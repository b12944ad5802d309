"""Runner results of the output-length protocol for the tests, built as the runner builds them.

Request records are made per output length with a given decode tok/s (two or more requests a
length, spread a little so each length has an interval); points, summaries, speedups and the
output-length figures come from the runner's own functions (``runner.stats``,
``runner.pairing``, ``runner.protocols.output_length``), and the whole result is checked by the runner's
result model, so a test's figures are what the evidence says.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from runner import stats
from runner.config import BenchmarkConfig
from runner.pairing import combined_speedup, point_speed
from runner.results import BenchmarkResult
from runner.roofline import derived_roofline
from tests.support.protocol_results import DRAFT, TARGET, _section

INPUT_TOKENS = 32
# Each length's requests run at these multiples of its decode tok/s.
SPREAD = (0.97, 1.0, 1.03)


def output_length_config(lengths: list[int], **options: Any) -> BenchmarkConfig:
    """A draft-dflash config of the tiny target on the output-length protocol."""
    protocol = {
        "name": "output-length",
        "input_tokens": INPUT_TOKENS,
        "output_lengths": lengths,
        "requests": len(SPREAD),
    }
    return BenchmarkConfig.model_validate(
        {
            "target_model": TARGET,
            "draft_model": DRAFT,
            "spec_types": ["draft-dflash"],
            "n_max": 4,
            "protocol": protocol | options.pop("protocol", {}),
        }
        | options
    )


def output_length_records(
    config: BenchmarkConfig, decode: list[float], *, drafting: bool
) -> list[dict[str, Any]]:
    """Records with, per output length, about the given decode tok/s; each request generates
    exactly its length (as ``ignore_eos`` makes the engine do)."""
    records: list[dict[str, Any]] = []
    lengths = config.protocol.output_lengths
    for point, (length, speed) in enumerate(zip(lengths, decode, strict=True)):
        for factor in SPREAD:
            rate = speed * factor
            predicted_ms = (length - 1) * 1000 / rate
            wall_ms = 7.0 + predicted_ms
            steps = (length - 1) // 2 if drafting else 0
            accepted = steps if drafting else 0
            records.append(
                {
                    "phase": "measure", "point": point, "input_tokens": INPUT_TOKENS,
                    "output_tokens_requested": length, "prompt_n": INPUT_TOKENS,
                    "prompt_ms": 5.0, "predicted_n": length, "predicted_ms": predicted_ms,
                    "decode_tokens_per_second": stats.decode_rate(length, predicted_ms),
                    "server_predicted_per_second": rate,
                    "end_to_end_tokens_per_second": length * 1000 / wall_ms, "ttft_ms": 6.0,
                    "ttft_source": "server prompt time", "wall_ms": wall_ms,
                    "draft_n": 2 * steps, "draft_n_accepted": accepted, "verify_steps": steps,
                    "tau": 1 + accepted / steps if steps else None,
                    "accepted_per_position": [],
                    # Greedy output the same on both sides (no divergence is recorded).
                    "output_sha256": hashlib.sha256(f"{point}-{len(records)}".encode()).hexdigest(),
                    "distinct_4gram_ratio": 0.9, "stopped_early": False, "index": len(records),
                    "first_divergence": None,
                }
            )  # fmt: skip
    return records


def _points(config: BenchmarkConfig, section: dict[str, Any]) -> None:
    records = section["requests"]
    section["points"] = config.protocol.with_point_figures(
        stats.depth_points(config, records), records
    )


def output_length_result(
    config: BenchmarkConfig,
    decode: list[float],
    baseline_decode: list[float] | None,
    *,
    models_dir: Path,
) -> dict[str, Any]:
    """A whole output-length result (with its paired baseline when given its decode tok/s per
    length), checked by the runner's result model, as JSON data."""
    records = output_length_records(config, decode, drafting=True)
    main = _section(config, records, models_dir)
    _points(config, main)
    baseline = None
    speedups: list[float | None] = []
    if baseline_decode is not None:
        base_config = config.baseline()
        base_records = output_length_records(base_config, baseline_decode, drafting=False)
        baseline = _section(base_config, base_records, models_dir)
        _points(base_config, baseline)
        speedups = [
            stats.ratio(point_speed(p), point_speed(r))
            for p, r in zip(main["points"], baseline["points"], strict=True)
        ]
        for point, speedup in zip(main["points"], speedups, strict=True):
            point["speedup"] = speedup
        main["points"] = config.protocol.with_paired_figures(main["points"], baseline["points"])
    engine = {"server_path": "/x", "release": "b11434", "backend": "cpu", "build_flags": []}
    main["summary"] |= {
        "speedup": combined_speedup(speedups),
        "lossless": None,
        "baseline_decode_tokens_per_second": (
            baseline["summary"]["decode_tokens_per_second"]["mean"] if baseline else None
        ),
        "lossless_note": None,
    }
    generated = sum(r["predicted_n"] for r in records)
    main["provenance"] |= {
        "engine": engine,
        # No CPU or GPU named: these results are recorded on kinds of every name (runner.door).
        "system": {"hostname": "h1"},
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:01:00+00:00",
        "token_budget": {
            "requests": len(records),
            "prompt_tokens": INPUT_TOKENS * len(records),
            "generated_tokens": generated,
            "total_tokens": INPUT_TOKENS * len(records) + generated,
        },
    }
    result = main | {"schema_version": 1, "engine": engine, "baseline": baseline}
    for section in (main, baseline) if baseline else (main,):
        section["summary"]["roofline"] = derived_roofline(section, run=result)
    return BenchmarkResult.model_validate(result).model_dump(mode="json", exclude_unset=True)
