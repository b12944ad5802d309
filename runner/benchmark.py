"""Run one benchmark config (and its paired baseline) on a real engine: the runner's entry point.

``run_benchmark`` is what the CLI and the service's GPU workers both call. This module owns the
orchestration only: check the models, plan the protocol's requests, measure each config in its
own engine sessions (reporting progress, honouring cancellation; a config and its paired baseline
in rounds of ABBA order, one engine alive at a time, ``_schedule``) and assemble the validated
``runner.results.BenchmarkResult``. The figures come from ``runner.stats``, the comparison with
the baseline from ``runner.pairing``, and the result's shape from ``runner.results``.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from runner import energy, protocols, stats
from runner.compatibility import check_pair, memory_problems
from runner.config import BenchmarkConfig, ConcurrencyProtocol
from runner.engines.build import Engine, locate
from runner.engines.flags import require_flags
from runner.engines.server import gpu_placement_argv
from runner.engines.session import EngineSession, ServerSession, open_session
from runner.errors import (
    BenchmarkCancelled,
    ConfigError,
    EngineBuildError,
    ModelCheckError,
    RunnerError,
)
from runner.fidelity import Divergence, TopTwo, judge_divergences
from runner.gguf.inspect import ModelInfo, inspect_model
from runner.pairing import Pairing, margin_positions, pair_with_baseline
from runner.provenance import MemorySampler, describe_gpus, system_info, visible_gpus
from runner.results import (
    RESULT_SCHEMA_VERSION,
    BenchmarkResult,
    EngineInfo,
    ModelFileInfo,
    load_result,
    result_error_message,
)
from runner.roofline import derived_roofline

# How much of an engine's log a result keeps.
LOG_TAIL_CHARS = 4000

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
    check_pair(config, target, draft)
    for info in (target, draft):
        if info is not None:
            _recordable(ModelFileInfo, info.as_dict(), ModelCheckError, f"model {info.path}")
    return target, draft


def _recordable(model: type[BaseModel], data: dict, error: type[RunnerError], what: str) -> None:
    """Refuse, before anything runs, what the result could not record at the end."""
    try:
        model.model_validate(data)
    except ValidationError as invalid:
        detail = result_error_message(invalid).removeprefix("invalid result: ")
        raise error(f"{what} cannot be recorded in a result: {detail}") from None


def check_gpu_placement(
    config: BenchmarkConfig, *, engine: Engine, target: ModelInfo, draft: ModelInfo | None
) -> None:
    """Refuse, before any engine starts, a multi-GPU config this binary or host cannot run: a
    flag the binary's --help does not list, a GPU the host does not have, or a GPU whose share
    of the weights and K/V cache exceeds its memory (runner.compatibility)."""
    require_flags(engine, gpu_placement_argv(config, engine=engine))
    gpus = visible_gpus() if engine.backend != "cpu" else None
    if not gpus:
        return
    memory = [gpu["memory_bytes"] for gpu in gpus]
    problems = memory_problems(config, target, draft, memory_bytes=None, gpu_memory=memory)
    if problems:
        detail = "; ".join(f"{field}: {' '.join(found)}" for field, found in problems.items())
        raise ConfigError(f"this host's GPUs ({describe_gpus(gpus)}) cannot run it: {detail}")


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


@dataclass(frozen=True)
class _Measured:
    """One config's engine session: its command, measured records and where the time went."""

    argv: list[str]
    command: str
    records: list[dict]
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


def _margin_pass(
    session: EngineSession,
    specs: list[protocols.RequestSpec],
    records: list[dict],
    reference_outputs: list[list[int]],
) -> list[list[Divergence]]:
    """Every divergence of each speculative request from the baseline, judged, unmeasured.

    Each diverged request is generated again up to its first divergence with n_probs (one prompt
    and position is asked once; a pass that does not retrace the measured tokens gives no
    margin), and after each near tie the baseline is continued from the speculative output's
    prefix to find and weigh the next (``runner.fidelity.judge_divergences``; one prompt and
    prefix is continued once). A continuation that does not reach the request's end gives none.
    """
    outputs = [record["output_tokens"] for record in records]
    asked: dict[tuple[str, int], list[TopTwo]] = {}
    continued: dict[tuple[str, tuple[int, ...]], list[TopTwo] | None] = {}

    def continuation(
        spec: protocols.RequestSpec, tokens: list[int], position: int
    ) -> list[TopTwo] | None:
        prefix = tuple(tokens[: position + 1])
        key = (spec.prompt_sha256, prefix)
        if key not in continued:
            steps = session.continued_top_two(spec, prefix)
            whole = len(steps) == spec.output_tokens - len(prefix)
            continued[key] = steps if whole else None
        return continued[key]

    judged: list[list[Divergence]] = []
    for spec, baseline_tokens, tokens, position in zip(
        specs, outputs, reference_outputs, margin_positions(reference_outputs, outputs), strict=True
    ):
        first = None
        if position is not None:
            key = (spec.prompt_sha256, position)
            if key not in asked:
                asked[key] = session.top_two(dataclasses.replace(spec, output_tokens=position + 1))
            retraced = [step.token for step in asked[key][: position + 1]]
            if retraced == baseline_tokens[: position + 1]:
                first = asked[key][position]
        judged.append(
            judge_divergences(
                tokens,
                baseline_tokens,
                first=first,
                continuation=functools.partial(continuation, spec, tokens),
            )
        )
    return judged


# A paired baseline's margin pass, run in its engine session on the records it measured there.
_Margins = Callable[[EngineSession, list[dict]], list[list[Divergence]]]


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
    margins: _Margins | None = None,
    slots: int = 1,
) -> _Measured:
    """Measure one config in its own engine session of ``slots`` slots; with margins (a paired
    baseline's last session of a stage) also take the baseline's margins, in the same session,
    after the measured requests."""
    session = open_session(
        config,
        engine=engine,
        target=target,
        draft=draft,
        request_timeout_s=request_timeout_s,
        start_timeout_s=start_timeout_s,
        slots=slots,
    )
    progress.recent_log = session.recent_log
    progress.report("loading")
    held_from = time.monotonic()
    records = []
    request_seconds = 0.0
    try:
        session.start()
        sampler = MemorySampler(session.pid).start()
        # NVML's energy counter of the engine's GPUs, read around each request (runner.energy).
        meter = energy.EnergyMeter.open() if engine.backend == "cuda" else None
        # Each GPU's energy over the measured waves; None once a wave has no figure.
        gpu_joules = [0.0] * meter.gpu_count if meter is not None else None
        try:
            for wave in protocols.waves(plan):
                if should_cancel and should_cancel():
                    raise BenchmarkCancelled("benchmark cancelled")
                before = energy.read(meter)
                answered = _measure_wave(session, wave)
                after = energy.read(meter)
                joules = energy.joules_between(before, after)
                if wave[0].phase == "measure":
                    gpu_joules = energy.add_per_gpu(
                        gpu_joules, energy.joules_per_gpu_between(before, after)
                    )
                shares = energy.share_by_tokens(joules, [r["predicted_n"] for r in answered])
                # A wave's requests run side by side: its time is its slowest request's.
                request_seconds += max(record["wall_ms"] for record in answered) / 1000.0
                for spec, record, share in zip(wave, answered, shares, strict=True):
                    record |= spec.labels() | {"energy_joules": share}
                    progress.done += 1
                    progress.tokens += record["predicted_n"] + record["prompt_n"]
                    if spec.phase == "measure":
                        records.append(record)
                progress.report("warmup" if wave[0].phase == "warmup" else phase)
            divergences = None
            if margins is not None:
                progress.report("baseline margins")
                divergences = margins(session, records)
        finally:
            peak = sampler.stop()
            if meter is not None:
                meter.close()
            kind = sampler.kind
            gpus = _gpu_figures(sampler.gpu_peaks, gpu_joules if records else None)
    finally:
        progress.recent_log = None
        session.stop()
        held = time.monotonic() - held_from
    return _Measured(
        argv=session.argv,
        command=session.command,
        records=records,
        peak_memory_bytes=peak or None,
        memory_kind=kind,
        load_seconds=session.load_seconds,
        held_seconds=held,
        harness_overhead_seconds=held - (session.load_seconds or 0.0) - request_seconds,
        # A result's text never carries NUL characters, whatever a crashing engine printed.
        log_tail=session.log_text()[-LOG_TAIL_CHARS:].replace("\x00", ""),
        divergences=divergences,
        gpus=gpus,
    )


def _gpu_figures(
    peaks: list[int] | None, joules: list[float] | None
) -> list[dict[str, Any]] | None:
    """Each GPU's peak memory and energy (results.GpuFigures), where NVML sampled the GPUs;
    energy only where the meter read the same GPUs the sampler did."""
    if not peaks:
        return None
    if joules is not None and len(joules) != len(peaks):
        joules = None
    return [
        {
            "index": index,
            "peak_memory_bytes": peak or None,
            "energy_joules": joules[index] if joules is not None else None,
        }
        for index, peak in enumerate(peaks)
    ]


def _measure_wave(session: EngineSession, wave: list[protocols.RequestSpec]) -> list[dict]:
    """One request as every protocol measures it, or a concurrency wave all at once."""
    if len(wave) == 1:
        return [session.measure(wave[0])]
    if not isinstance(session, ServerSession):
        raise RunnerError("only llama-server answers several requests at once")
    return session.measure_wave(wave)


def _stages(
    config: BenchmarkConfig, plan: list[protocols.RequestSpec]
) -> list[tuple[int, list[protocols.RequestSpec]]]:
    """(slots, requests) of each engine session: one per concurrency level, with that many slots,
    else one session of one slot for the whole plan."""
    if not isinstance(config.protocol, ConcurrencyProtocol):
        return [(1, plan)]
    return [
        (level, [spec for spec in plan if spec.point == index])
        for index, level in enumerate(config.protocol.levels)
    ]


@dataclass(frozen=True)
class _Session:
    """One engine session of a run: its side, slots, what it sends (warm-ups first, in plan
    order) and which of the run's measured requests those are."""

    side: protocols.Side
    slots: int
    plan: list[protocols.RequestSpec]
    measured: list[int]
    # On a stage's last baseline session of a graded pair: every measured request of the stage,
    # whose margins it takes once the speculative side has measured them all.
    margin_indices: list[int] | None = None


def _schedule(
    config: BenchmarkConfig,
    plan: list[protocols.RequestSpec],
    *,
    paired: bool,
    graded: bool,
    rounds: int,
) -> tuple[list[_Session], list[dict[str, Any]] | None]:
    """The run's engine sessions in the order they run, and a paired run's rounds.

    Unpaired, each stage (``_stages``) is one session. Paired, each stage's measured requests
    are split into rounds (``protocols.split_rounds``) whose sides run in ABBA order
    (``protocols.round_orders``), so a drift of clocks or power over the run falls on both
    sides. Each round of each side is its own engine session, started and stopped, never two
    engines at once: a session's peak memory is sampled for its own process (MemorySampler
    falls back to the whole device's memory where NVML hides other processes), so only one
    process alive keeps each side's peak its own, and a pair that fits one engine at a time
    needs no room for two. The cost is a model load and the warm-ups again per session, so the
    turns of a side that meet (ABBA's middle pair) share one session: two rounds are baseline,
    speculative, baseline: the speculative side is measured in one session as it always was,
    and the baseline loads twice. Every session's load, warm-ups and harness overhead are its
    side's own (``_run_one_config``). The baseline's turn always ends a stage, so its last
    session takes the margins (``_margin_pass``) against the speculative outputs.
    """
    sessions: list[_Session] = []
    orders: list[dict[str, Any]] = []
    levels = isinstance(config.protocol, ConcurrencyProtocol)
    offset = 0
    for slots, stage in _stages(config, plan):
        count = sum(spec.phase == "measure" for spec in stage)
        if not paired:
            sessions.append(
                _Session("speculative", slots, stage, list(range(offset, offset + count)))
            )
            offset += count
            continue
        chunks = protocols.split_rounds(stage, rounds)
        turns: list[tuple[protocols.Side, list[int]]] = []
        for number, (chunk, order) in enumerate(
            zip(chunks, protocols.round_orders(len(chunks)), strict=True)
        ):
            orders.append(
                {
                    "round": number,
                    "concurrency": slots if levels else None,
                    "order": list(order),
                    "request_indices": [offset + index for index in chunk],
                }
            )
            turns += [(side, chunk) for side in order]
        for side, group in groupby(turns, key=itemgetter(0)):
            chosen = {index for _, chunk in group for index in chunk}
            sessions.append(
                _Session(
                    side, slots, _session_plan(stage, chosen), sorted(offset + i for i in chosen)
                )
            )
        if graded:
            sessions[-1] = dataclasses.replace(
                sessions[-1], margin_indices=list(range(offset, offset + count))
            )
        offset += count
    return sessions, orders if paired else None


def _session_plan(
    stage: list[protocols.RequestSpec], chosen: set[int]
) -> list[protocols.RequestSpec]:
    """A stage's warm-ups and its chosen measured requests (indices among its measured), in
    plan order: every session warms up before it measures."""
    kept = []
    index = 0
    for spec in stage:
        if spec.phase == "measure":
            if index in chosen:
                kept.append(spec)
            index += 1
        else:
            kept.append(spec)
    return kept


def _joined(parts: list[_Measured], records: list[dict], divergences: list | None) -> _Measured:
    """A side's sessions as one: records and margins in plan order, each distinct command (one a
    line), the largest peak memory, the sums of the times."""
    if len(parts) == 1:
        return dataclasses.replace(parts[0], records=records, divergences=divergences)
    peaks = [part.peak_memory_bytes for part in parts if part.peak_memory_bytes]
    loads = [part.load_seconds for part in parts if part.load_seconds is not None]
    tails = "".join(part.log_tail for part in parts)
    return _Measured(
        gpus=_joined_gpus([part.gpus for part in parts]),
        argv=parts[-1].argv,
        command="\n".join(dict.fromkeys(part.command for part in parts)),
        records=records,
        peak_memory_bytes=max(peaks, default=None),
        memory_kind=parts[-1].memory_kind,
        load_seconds=sum(loads) if loads else None,
        held_seconds=sum(part.held_seconds for part in parts),
        harness_overhead_seconds=sum(part.harness_overhead_seconds for part in parts),
        log_tail=tails[-LOG_TAIL_CHARS:],
        divergences=divergences,
    )


def _joined_gpus(parts: list[list[dict[str, Any]] | None]) -> list[dict[str, Any]] | None:
    """A side's sessions' GPUs as one: each GPU's largest peak and the sum of its energies
    (None unless every session measured the same GPUs, or as soon as one has no figure)."""
    if not parts or any(part is None for part in parts):
        return None
    counts = {len(part or ()) for part in parts}
    if len(counts) != 1:
        return None
    joined = []
    for index in range(counts.pop()):
        own = [part[index] for part in parts if part is not None]
        peaks = [gpu["peak_memory_bytes"] for gpu in own if gpu["peak_memory_bytes"]]
        energies = [gpu["energy_joules"] for gpu in own]
        joined.append(
            {
                "index": index,
                "peak_memory_bytes": max(peaks, default=None),
                "energy_joules": None if None in energies else sum(energies),
            }
        )
    return joined


def _run_sessions(
    sessions: list[_Session],
    *,
    configs: dict[protocols.Side, tuple[BenchmarkConfig, ModelInfo | None]],
    plan: list[protocols.RequestSpec],
    progress: _Progress,
    should_cancel: Callable[[], bool] | None,
    **measure: Any,
) -> dict[protocols.Side, _Measured]:
    """Run the scheduled sessions one after another (``_schedule``) and join each side's."""
    specs = [spec for spec in plan if spec.phase == "measure"]
    records: dict[protocols.Side, dict[int, dict]] = {side: {} for side in configs}
    parts: dict[protocols.Side, list[_Measured]] = {side: [] for side in configs}
    margins: dict[int, list[Divergence] | None] = {}
    for session in sessions:
        # Between sessions too: a cancelled run loads no further engine.
        if should_cancel and should_cancel():
            raise BenchmarkCancelled("benchmark cancelled")
        config, draft = configs[session.side]
        part = _run_one_config(
            config,
            draft=draft,
            plan=session.plan,
            slots=session.slots,
            progress=progress,
            phase="baseline" if session.side == "baseline" else "measuring",
            should_cancel=should_cancel,
            margins=None
            if session.margin_indices is None
            else _stage_margins(session, specs, records),
            **measure,
        )
        records[session.side] |= dict(zip(session.measured, part.records, strict=True))
        if session.margin_indices is not None:
            margins |= dict(zip(session.margin_indices, part.divergences or [], strict=True))
        parts[session.side].append(part)
    return {
        side: _joined(
            parts[side],
            [records[side][index] for index in sorted(records[side])],
            [margins.get(index) for index in range(len(specs))]
            if side == "baseline" and margins
            else None,
        )
        for side in configs
        if parts[side]
    }


def _stage_margins(
    session: _Session,
    specs: list[protocols.RequestSpec],
    records: dict[protocols.Side, dict[int, dict]],
) -> _Margins:
    """The margin pass of a stage's last baseline session: every measured request of the stage,
    the baseline's records from this and its earlier sessions, the speculative outputs."""
    indices = session.margin_indices or []

    def take(engine_session: EngineSession, own: list[dict]) -> list[list[Divergence]]:
        baseline = records["baseline"] | dict(zip(session.measured, own, strict=True))
        return _margin_pass(
            engine_session,
            [specs[index] for index in indices],
            [baseline[index] for index in indices],
            [records["speculative"][index]["output_tokens"] for index in indices],
        )

    return take


def _section(
    config: BenchmarkConfig,
    measured: _Measured,
    *,
    engine: Engine,
    target: ModelInfo,
    draft: ModelInfo | None,
    points: list[dict[str, Any]],
    pairing: Pairing | None,
) -> dict[str, Any]:
    """One measured config as the plain data of a result section."""
    if pairing is not None:
        points = [
            point | {"speedup": speedup}
            for point, speedup in zip(points, pairing.point_speedups, strict=True)
        ]
    unpaired = [None] * len(measured.records)
    divergences = zip(
        pairing.first_divergences if pairing else unpaired,
        pairing.divergences if pairing else unpaired,
        pairing.divergence_margins if pairing else unpaired,
        # Every divergence judged (runner.fidelity); null unpaired or synthetic.
        (pairing.divergence_lists or unpaired) if pairing else unpaired,
        strict=True,
    )
    scores = config.protocol.scores(measured.records)
    requests = [
        {k: v for k, v in record.items() if k not in ("output_tokens", "output_text")}
        | {
            "quality": score,
            "index": index,
            "first_divergence": first,
            "divergence": kind,
            "divergence_margin": margin,
            "divergences": None if judged is None else [d.model_dump() for d in judged],
        }
        for index, (record, (first, kind, margin, judged), score) in enumerate(
            zip(measured.records, divergences, scores, strict=True)
        )
    ]
    summary = stats.pooled_figures(measured.records) | {
        "peak_memory_bytes": measured.peak_memory_bytes,
        "memory_kind": measured.memory_kind,
        "gpus": measured.gpus,
        "gpu_seconds": measured.held_seconds if engine.backend == "cuda" else 0.0,
        "engine_seconds": measured.held_seconds,
        "load_seconds": measured.load_seconds,
        "harness_overhead_seconds": measured.harness_overhead_seconds,
        "latency": stats.latency_figures(measured.records),
    }
    summary |= energy.energy_figures(measured.records)
    summary["quality"] = stats.accuracy_figures(requests)
    return {
        "config": config.canonical(),
        "config_key": config.key,
        "synthetic": config.is_synthetic,
        "summary": summary,
        "points": points,
        "requests": requests,
        "provenance": {
            "argv": measured.argv,
            "command": measured.command,
            "models": {"target": target.as_dict(), "draft": draft.as_dict() if draft else None},
            "engine_log_tail": measured.log_tail,
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
    rounds: int = protocols.PAIRED_ROUNDS,
) -> BenchmarkResult:
    """Measure a config on a real llama-server; with_baseline also runs its paired baseline,
    interleaved with it in ``rounds`` rounds of ABBA order (``_schedule``)."""
    if rounds < 1:
        raise RunnerError(f"a paired run needs at least one round, not {rounds}")
    started_at = datetime.now(UTC)
    target, draft = check_models(config, models_dir=Path(models_dir))
    if config.engine == "llama-cpp-python":
        from runner.engines.llama_cpp_python import describe_engine

        engine = describe_engine()
    else:
        engine = engine or locate()
    _recordable(EngineInfo, engine.as_dict(), EngineBuildError, f"engine {engine.server_path}")
    if config.engine == "llama-server" and config.uses_gpu_placement:
        check_gpu_placement(config, engine=engine, target=target, draft=draft)
    plan = protocols.plan_requests(config, vocab_size=target.vocab_size or 256)
    pair = with_baseline and config.is_speculative
    # Paired, the two sides run in rounds of ABBA order (_schedule); a graded pair's baseline
    # takes its top-2 margins exactly where the two outputs diverged (runner.fidelity).
    sessions, rounds_run = _schedule(
        config, plan, paired=pair, graded=pair and not config.is_synthetic, rounds=rounds
    )
    tracker = _Progress(sum(len(session.plan) for session in sessions), progress)
    baseline_config = config.baseline()
    sides = _run_sessions(
        sessions,
        configs={"speculative": (config, draft), "baseline": (baseline_config, None)},
        plan=plan,
        progress=tracker,
        should_cancel=should_cancel,
        engine=engine,
        target=target,
        request_timeout_s=request_timeout_s,
        start_timeout_s=start_timeout_s,
    )
    section = functools.partial(_section, engine=engine, target=target)
    measured = sides["speculative"]
    outputs = [record["output_tokens"] for record in measured.records]
    points = config.protocol.with_point_figures(
        stats.depth_points(config, measured.records), measured.records
    )
    baseline = pairing = None
    if pair:
        baseline_measured = sides["baseline"]
        baseline = section(
            baseline_config,
            baseline_measured,
            draft=None,
            points=baseline_config.protocol.with_point_figures(
                stats.depth_points(baseline_config, baseline_measured.records),
                baseline_measured.records,
            ),
            pairing=None,
        )
        pairing = pair_with_baseline(
            points=points,
            baseline_points=baseline["points"],
            outputs=outputs,
            baseline_outputs=[r["output_tokens"] for r in baseline_measured.records],
            synthetic=config.is_synthetic,
            baseline_divergences=baseline_measured.divergences,
        )
        # The figures only a pair of the protocol gives (an output length's speedup interval).
        points = config.protocol.with_paired_figures(points, baseline["points"])
    result = section(config, measured, draft=draft, points=points, pairing=pairing)
    result["summary"] |= {
        "speedup": pairing.speedup if pairing else None,
        "lossless": pairing.lossless if pairing else None,
        "baseline_decode_tokens_per_second": (
            baseline["summary"]["decode_tokens_per_second"]["mean"] if baseline else None
        ),
        "lossless_note": pairing.lossless_note if pairing else None,
        "fidelity": pairing.fidelity.model_dump() if pairing and pairing.fidelity else None,
        "repeated_prompt": protocols.repeated_prompt(config, result["requests"]),
        "crossover_concurrency": pairing.crossover_concurrency if pairing else None,
        "quality_difference": (
            stats.quality_difference(result["requests"], baseline["requests"]) if baseline else None
        ),
    }
    if baseline is not None:
        result["summary"]["gpu_seconds"] += baseline["summary"]["gpu_seconds"]
    result["provenance"] |= {
        "engine": engine.as_dict(),
        "system": system_info(),
        "started_at": started_at.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "token_budget": protocols.token_budget(config, with_baseline=pair, rounds=rounds),
        "paired_rounds": rounds_run,
    }
    result |= {
        "schema_version": RESULT_SCHEMA_VERSION,
        "engine": engine.as_dict(),
        "baseline": baseline,
    }
    # Each section's bandwidth roofline, from what the result records (runner.roofline).
    for part in (result, baseline):
        if part is not None:
            part["summary"]["roofline"] = derived_roofline(part, run=result)
    return load_result(result)
