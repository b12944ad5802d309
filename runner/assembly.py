"""Assemble a ``BenchmarkResult`` from what a run measured: each side's records, figures and
provenance, and what pairing the two found.

The measured side (``Measured``) is what its engine sessions gave: the engine's own records, as
``runner.engines.measure.build_record`` defines them, and where the time and memory went. Each
part of the result is built as its typed model from ``runner.stats`` (the pooled figures and
points), ``runner.energy``, ``runner.quality``, ``runner.pairing`` and ``runner.roofline``; the
result model then checks every figure against its own requests (``runner.results``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from runner import energy, protocols, stats
from runner.config import BenchmarkConfig
from runner.engines.build import Engine
from runner.fidelity import Divergence
from runner.gguf.inspect import ModelInfo
from runner.pairing import Pairing, pair_with_baseline
from runner.results import (
    RESULT_SCHEMA_VERSION,
    BenchmarkResult,
    EngineInfo,
    PairedRound,
    Point,
    Provenance,
    QualityScore,
    RequestRecord,
    ResultProvenance,
    ResultSummary,
    Roofline,
    Section,
    Summary,
    SystemInfo,
    TokenBudget,
)
from runner.roofline import derived_roofline

# How much of an engine's log a result keeps.
LOG_TAIL_CHARS = 4000

# A record's fields the result leaves out: the tokens and text are evidence for pairing and
# scoring, and only their hash and score are kept.
UNRECORDED_FIELDS = ("output_tokens", "output_text")


@dataclass(frozen=True)
class Measured:
    """One config's engine sessions: its command, measured records and where the time went."""

    argv: list[str]
    command: str
    records: list[dict[str, Any]]
    peak_memory_bytes: int | None
    memory_kind: str
    load_seconds: float | None
    held_seconds: float
    # What the runner itself adds beyond model load and generation (checks, scrapes, stop, and
    # a baseline's margin pass).
    harness_overhead_seconds: float
    log_tail: str
    # A paired baseline's margin pass: each speculative request's divergences, judged by the
    # baseline's top-2 margins (runner.fidelity.judge_divergences).
    divergences: Sequence[list[Divergence] | None] | None = None
    # Each GPU's own peak memory and energy over the measured requests (results.GpuFigures).
    gpus: list[dict[str, Any]] | None = None

    @property
    def outputs(self) -> list[list[int]]:
        """Each measured request's output tokens."""
        return [record["output_tokens"] for record in self.records]


@dataclass(frozen=True)
class Run:
    """What the whole run knows beside its sides' measurements: its engine and target, its
    times, its token budget, a paired run's rounds and its host (``runner.provenance``)."""

    engine: Engine
    target: ModelInfo
    started_at: datetime
    finished_at: datetime
    token_budget: dict[str, int]
    paired_rounds: list[PairedRound] | None
    system: dict[str, Any]


def join_sessions(
    parts: list[Measured],
    records: Mapping[int, dict[str, Any]],
    margins: Mapping[int, list[Divergence] | None],
    *,
    requests: int,
) -> Measured:
    """A side's sessions as one: its records (by measured index) and margins in plan order, each
    distinct command (one a line), the largest peak memory, the sums of the times."""
    return Measured(
        gpus=_joined_gpus(parts),
        argv=parts[-1].argv,
        command="\n".join(dict.fromkeys(part.command for part in parts)),
        records=[records[index] for index in sorted(records)],
        # The largest session's peak: one engine is alive at a time.
        peak_memory_bytes=max(part.peak_memory_bytes or 0 for part in parts) or None,
        memory_kind=parts[-1].memory_kind,
        load_seconds=_total([part.load_seconds for part in parts]),
        held_seconds=sum(part.held_seconds for part in parts),
        harness_overhead_seconds=sum(part.harness_overhead_seconds for part in parts),
        log_tail="".join(part.log_tail for part in parts)[-LOG_TAIL_CHARS:],
        divergences=_in_plan_order(margins, requests),
    )


def _in_plan_order(
    margins: Mapping[int, list[Divergence] | None], requests: int
) -> list[list[Divergence] | None] | None:
    """The margin pass's divergences of every measured request; None without a margin pass."""
    return [margins.get(index) for index in range(requests)] if margins else None


def _total(values: list[float | None]) -> float | None:
    """The sum of the known values; None where none is known."""
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def _joined_gpus(parts: list[Measured]) -> list[dict[str, Any]] | None:
    """A side's sessions' GPUs as one: each GPU's largest peak and the sum of its energies
    (None unless every session measured the same GPUs, or as soon as one has no figure)."""
    known = [part.gpus for part in parts if part.gpus is not None]
    if not parts or len(known) < len(parts) or len({len(part) for part in known}) != 1:
        return None
    return [_joined_gpu(index, [part[index] for part in known]) for index in range(len(known[0]))]


def _joined_gpu(index: int, own: list[dict[str, Any]]) -> dict[str, Any]:
    peaks = [gpu["peak_memory_bytes"] for gpu in own if gpu["peak_memory_bytes"]]
    energies = [gpu["energy_joules"] for gpu in own]
    return {
        "index": index,
        "peak_memory_bytes": max(peaks, default=None),
        "energy_joules": None if None in energies else sum(energies),
    }


def assemble_result(
    config: BenchmarkConfig,
    sides: Mapping[protocols.Side, Measured],
    *,
    run: Run,
    draft: ModelInfo | None,
) -> BenchmarkResult:
    """The result of a run: the measured config's section, paired with its baseline's."""
    measured = sides["speculative"]
    points = _points(config, measured)
    baseline = pairing = None
    if "baseline" in sides:
        baseline_config = config.baseline()
        baseline_points = _points(baseline_config, sides["baseline"])
        baseline = _baseline_section(baseline_config, sides["baseline"], baseline_points, run=run)
        pairing = pair_with_baseline(
            points=points,
            baseline_points=baseline_points,
            outputs=measured.outputs,
            baseline_outputs=sides["baseline"].outputs,
            synthetic=config.is_synthetic,
            baseline_divergences=sides["baseline"].divergences,
        )
        speedups = [p | {"speedup": s} for p, s in zip(points, pairing.point_speedups, strict=True)]
        # The figures only a pair of this protocol gives (an output length's speedup interval).
        points = config.protocol.with_paired_figures(speedups, baseline_points)
    requests = _requests(config, measured, pairing)
    summary = _summary_figures(measured, requests, engine=run.engine)
    if baseline is not None:
        summary["gpu_seconds"] += baseline.summary.gpu_seconds
    provenance = _provenance(measured, run.target, draft)
    return BenchmarkResult(
        config=config,
        config_key=config.key,
        synthetic=config.is_synthetic,
        summary=ResultSummary(
            **summary,
            **_paired_figures(config, pairing, requests, baseline),
            roofline=_roofline(config, measured, summary, points, provenance, run=run),
        ),
        points=[Point(**point) for point in points],
        requests=requests,
        provenance=ResultProvenance(
            **provenance,
            engine=EngineInfo(**run.engine.as_dict()),
            system=SystemInfo(**run.system),
            started_at=run.started_at.isoformat(),
            finished_at=run.finished_at.isoformat(),
            token_budget=TokenBudget(**run.token_budget),
            paired_rounds=run.paired_rounds,
        ),
        schema_version=RESULT_SCHEMA_VERSION,
        engine=EngineInfo(**run.engine.as_dict()),
        baseline=baseline,
    )


def _baseline_section(
    config: BenchmarkConfig, measured: Measured, points: list[dict[str, Any]], *, run: Run
) -> Section:
    """The paired baseline's section: its own figures, no pairing of its own."""
    requests = _requests(config, measured, None)
    summary = _summary_figures(measured, requests, engine=run.engine)
    provenance = _provenance(measured, run.target, None)
    return Section(
        config=config,
        config_key=config.key,
        synthetic=config.is_synthetic,
        summary=Summary(
            **summary, roofline=_roofline(config, measured, summary, points, provenance, run=run)
        ),
        points=[Point(**point) for point in points],
        requests=requests,
        provenance=Provenance(**provenance),
    )


def _points(config: BenchmarkConfig, measured: Measured) -> list[dict[str, Any]]:
    """A side's points (``runner.stats.depth_points``) with the output-length protocol's
    generated tokens; speedups not yet known."""
    points = stats.depth_points(config, measured.records)
    return config.protocol.with_point_figures(points, measured.records)


def _requests(
    config: BenchmarkConfig, measured: Measured, pairing: Pairing | None
) -> list[RequestRecord]:
    """Each measured request as the result records it: its score, index and divergences."""
    columns = _divergence_columns(pairing, len(measured.records))
    scores = [
        None if score is None else QualityScore.model_validate(score)
        for score in config.protocol.scores(measured.records)
    ]
    return [
        RequestRecord(
            **{k: v for k, v in record.items() if k not in UNRECORDED_FIELDS},
            quality=scores[index],
            index=index,
            **{field: column[index] for field, column in columns.items()},
        )
        for index, record in enumerate(measured.records)
    ]


# A request record's fields that its pairing with the baseline fills.
DIVERGENCE_FIELDS = ("first_divergence", "divergence", "divergence_margin", "divergences")


def _divergence_columns(pairing: Pairing | None, count: int) -> dict[str, list[Any]]:
    """Each request's divergence fields, by field: its pairing's, null where unpaired."""
    if not pairing:
        return dict.fromkeys(DIVERGENCE_FIELDS, [None] * count)
    return {
        "first_divergence": pairing.first_divergences,
        "divergence": pairing.divergences,
        "divergence_margin": pairing.divergence_margins,
        # Every divergence judged (runner.fidelity); null synthetic.
        "divergences": pairing.divergence_lists or [None] * count,
    }


def _summary_figures(
    measured: Measured, requests: list[RequestRecord], *, engine: Engine
) -> dict[str, Any]:
    """A section's summary figures: pooled from its records (``runner.stats``,
    ``runner.energy``), and where its engine's time and memory went."""
    records = measured.records
    return {
        **stats.pooled_figures(records),
        **energy.energy_figures(records),
        "peak_memory_bytes": measured.peak_memory_bytes,
        "memory_kind": measured.memory_kind,
        "gpus": measured.gpus,
        "gpu_seconds": measured.held_seconds if engine.backend == "cuda" else 0.0,
        "engine_seconds": measured.held_seconds,
        "load_seconds": measured.load_seconds,
        "harness_overhead_seconds": measured.harness_overhead_seconds,
        "latency": stats.latency_figures(records),
        "quality": stats.accuracy([r.quality.correct for r in requests if r.quality]),
    }


def _paired_figures(
    config: BenchmarkConfig,
    pairing: Pairing | None,
    requests: list[RequestRecord],
    baseline: Section | None,
) -> dict[str, Any]:
    """The measured config's summary figures that pairing it with its baseline gives."""
    repeated = protocols.repeated_prompt(
        config, [{"prompt_sha256": r.prompt_sha256} for r in requests]
    )
    if pairing is None or baseline is None:
        unpaired = ("speedup", "lossless", "baseline_decode_tokens_per_second", "lossless_note")
        return dict.fromkeys(unpaired) | {
            "fidelity": None,
            "repeated_prompt": repeated,
            "crossover_concurrency": None,
            "quality_difference": None,
        }
    return {
        "speedup": pairing.speedup,
        "lossless": pairing.lossless,
        "baseline_decode_tokens_per_second": baseline.summary.decode_tokens_per_second.mean,
        "lossless_note": pairing.lossless_note,
        "fidelity": pairing.fidelity,
        "repeated_prompt": repeated,
        "crossover_concurrency": pairing.crossover_concurrency,
        "quality_difference": stats.paired_difference(
            stats.task_pairs(_task_scores(requests), _task_scores(baseline.requests))
        ),
    }


def _task_scores(requests: Sequence[RequestRecord]) -> list[tuple[str, bool]]:
    return [(r.quality.task_id, r.quality.correct) for r in requests if r.quality is not None]


def _provenance(measured: Measured, target: ModelInfo, draft: ModelInfo | None) -> dict[str, Any]:
    """A section's provenance: its command, its models and its engine's log."""
    return {
        "argv": measured.argv,
        "command": measured.command,
        "models": {"target": target.as_dict(), "draft": draft.as_dict() if draft else None},
        "engine_log_tail": measured.log_tail,
    }


def _roofline(
    config: BenchmarkConfig,
    measured: Measured,
    summary: dict[str, Any],
    points: list[dict[str, Any]],
    provenance: dict[str, Any],
    *,
    run: Run,
) -> Roofline | None:
    """A section's bandwidth roofline (``runner.roofline.derived_roofline``), from its parts
    and the run's engine and host as they are recorded."""
    section = {
        "config": config.canonical(),
        "summary": summary,
        "points": points,
        "requests": measured.records,
        "provenance": provenance,
    }
    run_data = {"engine": run.engine.as_dict(), "provenance": {"system": run.system}}
    derived = derived_roofline(section, run=run_data)
    return None if derived is None else Roofline(**derived)
