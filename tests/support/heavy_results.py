"""The heaviest result a person can upload: the concurrency protocol's widest levels (16 of them,
49 to 64 requests in flight) for as many rounds as fit the upload limit
(SPECBOARD_MAX_IMPORT_BYTES), every request with its energy and the GPU's bandwidth known (so
the page derives a roofline per level), and the longest llama-server command and engine log the
result model takes. The run-page tests and bench/page_load.py load a run page with it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from runner.config import BenchmarkConfig
from runner.protocols import MAX_CONCURRENCY, MAX_CONCURRENCY_LEVELS
from runner.results import MAX_LOG_CHARS
from tests.support.protocol_results import DRAFT, OUTPUT_TOKENS, TARGET, _record
from tests.support.stored_results import BANDWIDTH

LEVELS = list(range(MAX_CONCURRENCY - MAX_CONCURRENCY_LEVELS + 1, MAX_CONCURRENCY + 1))
MAX_ROUNDS = 100  # the concurrency protocol's own limit


def heavy_config(*, rounds: int) -> BenchmarkConfig:
    """A draft-dflash config of the tiny target at the widest levels, `rounds` rounds each."""
    protocol = {"name": "concurrency", "levels": LEVELS, "input_tokens": 64, "rounds": rounds}
    return BenchmarkConfig.model_validate(
        {
            "target_model": TARGET,
            "draft_model": DRAFT,
            "spec_types": ["draft-dflash"],
            "n_max": 4,
            "protocol": protocol | {"output_tokens": OUTPUT_TOKENS},
        }
    )


def heavy_records(config: BenchmarkConfig, *, rounds: int) -> list[dict[str, Any]]:
    """Every round of every level of `config`: each round's aggregate a little apart from the
    next, 3 of 4 drafted tokens accepted."""
    records: list[dict[str, Any]] = []
    for point, level in enumerate(config.protocol.levels):
        for round_index in range(rounds):
            aggregate = 1000.0 + 10 * point + round_index % 7
            wall_ms = level * OUTPUT_TOKENS * 1000 / aggregate
            for _ in range(level):
                records.append(
                    _record(
                        len(records),
                        point,
                        decode=(OUTPUT_TOKENS - 1) * 1000 / (wall_ms - 7.0) * 1.1,
                        input_tokens=config.protocol.input_tokens,
                        wall_ms=wall_ms,
                        round=round_index,
                        concurrency=level,
                        draft=(16, 12),
                        tau=None,
                    )
                )
    return records


def result_of(make_protocol_result: Callable, *, rounds: int) -> dict:
    """The heavy result with this many rounds a level."""
    config = heavy_config(rounds=rounds)
    result = make_protocol_result(
        config,
        heavy_records(config, rounds=rounds),
        None,
        joules_per_request=3.0,
        bandwidth=BANDWIDTH,
    )
    provenance = result["provenance"]
    command = provenance["command"]
    provenance["command"] = command + " --alias " + "x" * (MAX_LOG_CHARS - len(command) - 9)
    provenance["engine_log_tail"] = ("llama-server log line\n" * MAX_LOG_CHARS)[:MAX_LOG_CHARS]
    return result


def heaviest_result(make_protocol_result: Callable, *, limit_bytes: int) -> dict:
    """The heavy result with the most rounds whose JSON (as an upload sends it) is within
    `limit_bytes`."""
    one = len(json.dumps(result_of(make_protocol_result, rounds=1)))
    two = len(json.dumps(result_of(make_protocol_result, rounds=2)))
    rounds = max(1, min(MAX_ROUNDS, 1 + (limit_bytes - one) // (two - one)))
    while rounds > 1:
        result = result_of(make_protocol_result, rounds=rounds)
        if len(json.dumps(result).encode()) <= limit_bytes:
            return result
        rounds -= 1
    return result_of(make_protocol_result, rounds=1)
