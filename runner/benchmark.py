"""Run one benchmark config (and its paired baseline) on a real llama-server.

``run_benchmark`` is the runner's one entry point: the CLI and the service's GPU workers both
call it. Its result is plain JSON data; RESULT_SCHEMA_VERSION changes when the shape does.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from runner import protocols
from runner.config import BenchmarkConfig
from runner.engine import Engine, locate
from runner.errors import BenchmarkCancelled, ModelCheckError
from runner.gguf_inspect import ModelInfo, check_speculative_pair, inspect_model, max_dflash_n_max
from runner.provenance import MemorySampler, system_info
from runner.sessions import open_session
from runner.stats import ratio, summarize

RESULT_SCHEMA_VERSION = 1
DEGENERATE_DISTINCT_RATIO = 0.1

ProgressCallback = Callable[[dict], None]


def resolve_model(reference: str, models_dir: Path) -> Path:
    """A config's model reference as a path inside the models directory."""
    base = models_dir.resolve()
    path = (base / reference).resolve()
    if not path.is_relative_to(base):
        raise ModelCheckError(f"model path {reference!r} leaves the models directory")
    if not path.is_file():
        raise ModelCheckError(f"model file not found: {path}")
    return path


def check_models(
    config: BenchmarkConfig, *, models_dir: Path
) -> tuple[ModelInfo, ModelInfo | None]:
    """Read both models' GGUF metadata and refuse anything the engine would reject or clamp."""
    target = inspect_model(resolve_model(config.target_model, models_dir))
    draft = (
        inspect_model(resolve_model(config.draft_model, models_dir)) if config.draft_model else None
    )
    check_speculative_pair(target=target, draft=draft, spec_types=config.spec_types)
    if "draft-dflash" in config.spec_types and draft is not None and config.n_max is not None:
        limit = max_dflash_n_max(draft)
        if config.n_max > limit:
            raise ModelCheckError(
                f"n_max {config.n_max} is above this DFlash draft's limit of {limit} (block size - 1)"
            )
    if target.context_length and config.effective_ctx_size > target.context_length:
        raise ModelCheckError(
            f"context {config.effective_ctx_size} is above the target's training context "
            f"of {target.context_length} tokens"
        )
    return target, draft


class _Progress:
    def __init__(self, total: int, callback: ProgressCallback | None) -> None:
        self.total = total
        self.done = 0
        self.tokens = 0
        self.started = time.monotonic()
        self.callback = callback
        # The running engine's recent log, so a job page can show it live; None between engines.
        self.recent_log: Callable[[], str] | None = None

    def report(self, phase: str) -> None:
        if self.callback:
            event = {
                "phase": phase,
                "done": self.done,
                "total": self.total,
                "tokens": self.tokens,
                "elapsed_s": round(time.monotonic() - self.started, 3),
            }
            if self.recent_log is not None:
                event["log_tail"] = self.recent_log()
            self.callback(event)


def _run_one_config(
    config: BenchmarkConfig,
    *,
    engine: Engine,
    target: ModelInfo,
    draft: ModelInfo | None,
    plan: list[protocols.RequestSpec],
    progress: _Progress,
    phase: str,
    should_cancel: Callable[[], bool] | None,
    request_timeout_s: float,
    start_timeout_s: float,
) -> dict:
    session = open_session(
        config,
        engine=engine,
        target=target,
        draft=draft,
        request_timeout_s=request_timeout_s,
        start_timeout_s=start_timeout_s,
    )
    progress.recent_log = session.recent_log
    progress.report("loading")
    held_from = time.monotonic()
    records = []
    request_seconds = 0.0
    try:
        session.start()
        sampler = MemorySampler(session.pid).start()
        try:
            for spec in plan:
                if should_cancel and should_cancel():
                    raise BenchmarkCancelled("benchmark cancelled")
                record = session.measure(spec)
                request_seconds += record["wall_ms"] / 1000.0
                progress.done += 1
                progress.tokens += record["predicted_n"] + record["prompt_n"]
                progress.report("warmup" if spec.phase == "warmup" else phase)
                if spec.phase == "measure":
                    records.append(record)
        finally:
            peak = sampler.stop()
            kind = sampler.kind
    finally:
        progress.recent_log = None
        session.stop()
        held = time.monotonic() - held_from
    return {
        "argv": session.argv,
        "command": session.command,
        "records": records,
        "peak_memory_bytes": peak or None,
        "memory_kind": kind,
        "load_seconds": session.load_seconds,
        "held_seconds": held,
        # What the runner itself adds beyond model load and generation (checks, scrapes, stop).
        "harness_overhead_seconds": held - (session.load_seconds or 0.0) - request_seconds,
        "log_tail": session.log_text()[-4000:],
    }


def _acceptance_and_tau(records: list[dict]) -> tuple[float | None, float | None]:
    """Pooled acceptance rate and tau (1 + accepted drafts per verify step) of some requests."""
    draft = sum(r["draft_n"] for r in records)
    accepted = sum(r["draft_n_accepted"] for r in records)
    steps = sum(r["verify_steps"] for r in records)
    # /metrics counts accepted drafts per position; engines without it give the total only.
    metric_accepted = sum(
        sum(r["accepted_per_position"]) if r["accepted_per_position"] else r["draft_n_accepted"]
        for r in records
    )
    return (
        accepted / draft if draft else None,
        1.0 + metric_accepted / steps if steps else None,
    )


def _pooled_summary(records: list[dict], part: dict, *, engine: Engine) -> dict:
    draft = sum(r["draft_n"] for r in records)
    accepted = sum(r["draft_n_accepted"] for r in records)
    steps = sum(r["verify_steps"] for r in records)
    acceptance_rate, tau = _acceptance_and_tau(records)
    positions = max((len(r["accepted_per_position"]) for r in records), default=0)
    per_position = [
        sum(r["accepted_per_position"][i] for r in records if i < len(r["accepted_per_position"]))
        for i in range(positions)
    ]
    ratios = [r["distinct_4gram_ratio"] for r in records]
    return {
        "decode_tokens_per_second": summarize(
            [r["decode_tokens_per_second"] for r in records if r["decode_tokens_per_second"]]
        ),
        "end_to_end_tokens_per_second": summarize(
            [
                r["end_to_end_tokens_per_second"]
                for r in records
                if r["end_to_end_tokens_per_second"]
            ]
        ),
        "ttft_ms": summarize([r["ttft_ms"] for r in records if r["ttft_ms"] is not None]),
        "acceptance_rate": acceptance_rate,
        # tau counts the target's own token: 1 + accepted drafts per verify step.
        "tau": tau,
        "draft_tokens": draft,
        "draft_accepted": accepted,
        "verify_steps": steps,
        # Share of verify steps in which draft position i was accepted.
        "acceptance_by_position": [count / steps for count in per_position] if steps else None,
        "peak_memory_bytes": part["peak_memory_bytes"],
        "memory_kind": part["memory_kind"],
        "degenerate": any(r["stopped_early"] for r in records)
        or (bool(ratios) and statistics.median(ratios) < DEGENERATE_DISTINCT_RATIO),
        "gpu_seconds": part["held_seconds"] if engine.backend == "cuda" else 0.0,
        "engine_seconds": part["held_seconds"],
        "load_seconds": part["load_seconds"],
        "harness_overhead_seconds": part["harness_overhead_seconds"],
    }


def _points(config: BenchmarkConfig, records: list[dict]) -> list[dict]:
    specs: list[tuple[int, int | None, int]]
    if config.protocol.name == "quick":
        specs = [(0, None, config.protocol.n_predict)]  # type: ignore[union-attr]
    else:
        specs = [
            (i, p.input_tokens, p.output_tokens)
            for i, p in enumerate(config.protocol.points)  # type: ignore[union-attr]
        ]
    points = []
    for index, input_tokens, output_tokens in specs:
        mine = [r for r in records if r["point"] == index]
        acceptance_rate, tau = _acceptance_and_tau(mine)
        points.append(
            {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "decode_tokens_per_second": summarize(
                    [r["decode_tokens_per_second"] for r in mine if r["decode_tokens_per_second"]]
                ),
                "acceptance_rate": acceptance_rate,
                "tau": tau,
                "speedup": None,
            }
        )
    return points


def _first_divergence(tokens: list[int], reference: list[int]) -> int | None:
    for index, (mine, theirs) in enumerate(zip(tokens, reference, strict=False)):
        if mine != theirs:
            return index
    return None if len(tokens) == len(reference) else min(len(tokens), len(reference))


def _public_records(records: list[dict]) -> list[dict]:
    public = []
    for index, record in enumerate(records):
        row = {k: v for k, v in record.items() if k != "output_tokens"}
        row["index"] = index
        row["first_divergence"] = None
        public.append(row)
    return public


def _section(
    config: BenchmarkConfig,
    part: dict,
    *,
    engine: Engine,
    target: ModelInfo,
    draft: ModelInfo | None,
) -> dict:
    records = part["records"]
    return {
        "config": config.canonical(),
        "config_key": config.key,
        "synthetic": config.is_synthetic,
        "summary": _pooled_summary(records, part, engine=engine),
        "points": _points(config, records),
        "requests": _public_records(records),
        "provenance": {
            "argv": part["argv"],
            "command": part["command"],
            "models": {"target": target.as_dict(), "draft": draft.as_dict() if draft else None},
            "engine_log_tail": part["log_tail"],
        },
    }


def run_benchmark(
    config: BenchmarkConfig,
    *,
    models_dir: Path,
    engine: Engine | None = None,
    with_baseline: bool = False,
    progress: ProgressCallback | None = None,
    should_cancel: Callable[[], bool] | None = None,
    request_timeout_s: float = 1800.0,
    start_timeout_s: float = 900.0,
) -> dict:
    """Measure a config on a real llama-server; with_baseline also runs its paired baseline."""
    started_at = datetime.now(UTC)
    target, draft = check_models(config, models_dir=Path(models_dir))
    if config.engine == "llama-cpp-python":
        from runner.inprocess import describe_engine

        engine = describe_engine()
    else:
        engine = engine or locate()
    plan = protocols.plan_requests(config, vocab_size=target.vocab_size or 256)
    pair = with_baseline and config.is_speculative
    tracker = _Progress(len(plan) * (2 if pair else 1), progress)
    run_one = functools.partial(
        _run_one_config,
        engine=engine,
        target=target,
        plan=plan,
        progress=tracker,
        should_cancel=should_cancel,
        request_timeout_s=request_timeout_s,
        start_timeout_s=start_timeout_s,
    )
    baseline_part = None
    baseline_config = config.baseline()
    if pair:
        baseline_part = run_one(baseline_config, draft=None, phase="baseline")
    main_part = run_one(config, draft=draft, phase="measuring")

    result = _section(config, main_part, engine=engine, target=target, draft=draft)
    result["schema_version"] = RESULT_SCHEMA_VERSION
    result["engine"] = engine.as_dict()
    summary = result["summary"]
    summary.update(
        speedup=None, lossless=None, baseline_decode_tokens_per_second=None, lossless_note=None
    )
    result["baseline"] = None
    if baseline_part is not None:
        baseline = _section(
            baseline_config, baseline_part, engine=engine, target=target, draft=None
        )
        result["baseline"] = baseline
        _pair_with_baseline(result, main_part["records"], baseline_part["records"], config)
        summary["gpu_seconds"] += baseline["summary"]["gpu_seconds"]
    result["provenance"].update(
        engine=engine.as_dict(),
        system=system_info(),
        started_at=started_at.isoformat(),
        finished_at=datetime.now(UTC).isoformat(),
        token_budget=protocols.token_budget(config, with_baseline=pair),
    )
    return result


def _pair_with_baseline(
    result: dict, records: list[dict], baseline_records: list[dict], config: BenchmarkConfig
) -> None:
    summary = result["summary"]
    baseline = result["baseline"]
    baseline_mean = baseline["summary"]["decode_tokens_per_second"]["mean"]
    summary["baseline_decode_tokens_per_second"] = baseline_mean
    for point, base_point in zip(result["points"], baseline["points"], strict=True):
        point["speedup"] = ratio(
            point["decode_tokens_per_second"]["mean"],
            base_point["decode_tokens_per_second"]["mean"],
        )
    speedups = [p["speedup"] for p in result["points"] if p["speedup"]]
    if len(speedups) == 1:
        summary["speedup"] = speedups[0]
    elif speedups:
        # Across depths, the geometric mean of the per-depth speedups; each depth is shown too.
        summary["speedup"] = math.exp(statistics.fmean(math.log(s) for s in speedups))
    divergences = []
    for public, record, reference in zip(
        result["requests"], records, baseline_records, strict=True
    ):
        public["first_divergence"] = _first_divergence(
            record["output_tokens"], reference["output_tokens"]
        )
        divergences.append(public["first_divergence"])
    if config.is_synthetic:
        summary["lossless_note"] = "synthetic acceptance: output is not the model's own"
    else:
        summary["lossless"] = all(index is None for index in divergences)
        if not summary["lossless"]:
            summary["lossless_note"] = "output differs from the baseline's greedy output"
