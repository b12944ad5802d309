"""Stored results of the concurrency and categories protocols for the page tests: a DFlash
config's categories result over three categories and its concurrency result over three levels,
each imported with its paired baseline as a runner result file, the concurrency one also with
its speculative requests streamed."""

from __future__ import annotations

from leaderboard import services
from leaderboard.models import Run
from runner.stats import request_tpot_ms
from tests.support.protocol_results import (
    categories_config,
    category_records,
    concurrency_config,
    concurrency_records,
)

CATEGORIES = ["code", "math", "translation"]
CATEGORY_DECODE = {"code": 180.0, "math": 120.0, "translation": 90.0}
CATEGORY_BASELINE = {"code": 100.0, "math": 100.0, "translation": 100.0}
CATEGORY_ACCEPTANCE = {"code": 0.9, "math": 0.6, "translation": 0.2}

LEVELS = [1, 2, 4]
# Aggregate tok/s per level: speculation pays at 1 and 2 concurrent requests, not at 4.
CONCURRENCY_SPECULATIVE = [100.0, 150.0, 160.0]
CONCURRENCY_BASELINE = [60.0, 120.0, 200.0]
CONCURRENCY_SPEEDUPS = [100 / 60, 150 / 120, 160 / 200]


def import_result(user, hardware, result) -> list[Run]:
    return services.import_runner_result(
        owner=user, hardware=hardware, result=result, source="test"
    )


def categories_result_file(make_protocol_result, **options) -> dict:
    """The DFlash config's categories result with its paired baseline, as a runner file (not
    imported); `options` go to make_protocol_result (joules_per_request, ...)."""
    config = categories_config(CATEGORIES)
    return make_protocol_result(
        config,
        category_records(config, CATEGORY_DECODE, CATEGORY_ACCEPTANCE),
        category_records(config.baseline(), CATEGORY_BASELINE, None),
        **options,
    )


def import_category_runs(user, hardware, make_protocol_result) -> list[Run]:
    """The DFlash config's categories result (80 J a request, above an H200's idle floor) with
    its paired baseline."""
    result = categories_result_file(make_protocol_result, joules_per_request=80.0)
    return import_result(user, hardware, result)


def import_concurrency_runs(user, hardware, make_protocol_result) -> list[Run]:
    """The DFlash config's concurrency result with its paired baseline."""
    config = concurrency_config(LEVELS)
    result = make_protocol_result(
        config,
        concurrency_records(config, CONCURRENCY_SPECULATIVE, acceptance=0.75),
        concurrency_records(config.baseline(), CONCURRENCY_BASELINE, acceptance=None),
    )
    return import_result(user, hardware, result)


def import_concurrency_config(
    user, hardware, make_protocol_result, levels, speculative, baseline, **protocol
) -> str:
    """A DFlash concurrency config at these levels (its protocol changed by `protocol`),
    imported with its paired baseline at these aggregate tok/s a level; its key."""
    config = concurrency_config(levels)
    if protocol:
        config = concurrency_config(levels, protocol=config.protocol.model_dump() | protocol)
    result = make_protocol_result(
        config,
        concurrency_records(config, speculative, acceptance=0.75),
        concurrency_records(config.baseline(), baseline, acceptance=None),
    )
    import_result(user, hardware, result)
    return config.key


def concurrency_key() -> str:
    """The key of the concurrency result's speculative config."""
    return concurrency_config(LEVELS).key


def streamed(records: list[dict]) -> list[dict]:
    """The records as a streamed run gives them: every token a chunk, in bursts of two (a verify
    step's tokens arrive together), the first at the time to first token, the last before the
    request's end; the time per output token from the record's clocks."""
    for record in records:
        n, ttft, wall = record["predicted_n"], record["ttft_ms"], record["wall_ms"]
        step = (wall - 1.0 - ttft) / (n - 1)
        record["chunk_arrival_ms"] = [ttft + step * (i - i % 2) for i in range(n)]
        record["tpot_ms"] = request_tpot_ms(record)
    return records


def import_streamed(user, hardware, make_protocol_result) -> tuple[list[dict], list[dict]]:
    """The concurrency result imported with its speculative requests streamed: (those requests,
    the baseline's)."""
    config = concurrency_config(LEVELS)
    mine = streamed(concurrency_records(config, CONCURRENCY_SPECULATIVE, acceptance=0.75))
    theirs = concurrency_records(config.baseline(), CONCURRENCY_BASELINE, acceptance=None)
    import_result(user, hardware, make_protocol_result(config, mine, theirs))
    return mine, theirs
