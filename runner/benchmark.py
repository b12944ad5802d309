"""Run one benchmark config (and its paired baseline) on a real engine: the runner's entry point.

``run_benchmark`` is what the CLI and the service's GPU workers both call: plan, measure,
assemble. This module owns the orchestration only: check the models and the engine, plan the
protocol's requests and the engine sessions (``runner.schedule``: a config and its paired
baseline in rounds of ABBA order, one engine alive at a time), measure each session (reporting
progress, honouring cancellation) and hand what each side measured to ``runner.assembly``, which
builds the typed ``runner.results.BenchmarkResult``.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from runner import energy, protocols
from runner.assembly import LOG_TAIL_CHARS, Measured, Run, assemble_result, join_sessions
from runner.compatibility import check_pair, memory_problems
from runner.config import BenchmarkConfig
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
from runner.pairing import margin_positions
from runner.provenance import MemorySampler, describe_gpus, system_info, visible_gpus
from runner.results import BenchmarkResult, EngineInfo, ModelFileInfo, result_error_message
from runner.schedule import Session, schedule

ProgressCallback = Callable[[dict[str, Any]], None]


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


def _recordable(
    model: type[BaseModel], data: dict[str, Any], error: type[RunnerError], what: str
) -> None:
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

    def watch(self, session: EngineSession) -> None:
        """Show this engine's log live from now on, and say that it is loading."""
        self.recent_log = session.recent_log
        self.report("loading")

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


def _margin_pass(
    session: EngineSession,
    specs: list[protocols.RequestSpec],
    records: list[dict[str, Any]],
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
_Margins = Callable[[EngineSession, list[dict[str, Any]]], list[list[Divergence]]]


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
) -> Measured:
    """Measure one config in its own engine session of ``slots`` slots; with margins (a paired
    baseline's last session of a stage) also take the baseline's margins, in the same session,
    after the measured requests."""
    timeouts = {"request_timeout_s": request_timeout_s, "start_timeout_s": start_timeout_s}
    session = open_session(
        config, engine=engine, target=target, draft=draft, slots=slots, **timeouts
    )
    progress.watch(session)
    held_from = time.monotonic()
    divergences = None
    try:
        session.start()
        sampler = MemorySampler(session.pid).start()
        # NVML's energy counter of the engine's GPUs, read around each request (runner.energy).
        meter = energy.EnergyMeter.open() if engine.backend == "cuda" else None
        try:
            tally = _measure_plan(session, plan, meter, progress, phase, should_cancel)
            if margins is not None:
                progress.report("baseline margins")
                divergences = margins(session, tally.records)
        finally:
            peak = sampler.stop()
            if meter is not None:
                meter.close()
    finally:
        progress.recent_log = None
        session.stop()
        held = time.monotonic() - held_from
    return Measured(
        argv=session.argv,
        command=session.command,
        records=tally.records,
        peak_memory_bytes=peak or None,
        memory_kind=sampler.kind,
        load_seconds=session.load_seconds,
        held_seconds=held,
        harness_overhead_seconds=held - (session.load_seconds or 0.0) - tally.request_seconds,
        # A result's text never carries NUL characters, whatever a crashing engine printed.
        log_tail=session.log_text()[-LOG_TAIL_CHARS:].replace("\x00", ""),
        divergences=divergences,
        gpus=_gpu_figures(sampler.gpu_peaks, tally.gpu_joules if tally.records else None),
    )


@dataclass
class _Tally:
    """What a session's waves measured: its measured records, the time its requests took, and
    each GPU's energy over the measured waves (None once a wave has no figure)."""

    records: list[dict[str, Any]]
    request_seconds: float
    gpu_joules: list[float] | None


def _measure_plan(
    session: EngineSession,
    plan: list[protocols.RequestSpec],
    meter: energy.EnergyMeter | None,
    progress: _Progress,
    phase: str,
    should_cancel: Callable[[], bool] | None,
) -> _Tally:
    """Send a session's plan wave by wave, each wave's energy shared out by its tokens."""
    tally = _Tally([], 0.0, [0.0] * meter.gpu_count if meter is not None else None)
    for wave in protocols.waves(plan):
        _stop_if_cancelled(should_cancel)
        before = energy.read(meter)
        answered = _measure_wave(session, wave)
        after = energy.read(meter)
        if wave[0].phase == "measure":
            per_gpu = energy.joules_per_gpu_between(before, after)
            tally.gpu_joules = energy.add_per_gpu(tally.gpu_joules, per_gpu)
        joules = energy.joules_between(before, after)
        shares = energy.share_by_tokens(joules, [r["predicted_n"] for r in answered])
        # A wave's requests run side by side: its time is its slowest request's.
        tally.request_seconds += max(record["wall_ms"] for record in answered) / 1000.0
        for spec, record, share in zip(wave, answered, shares, strict=True):
            record |= spec.labels() | {"energy_joules": share}
            progress.done += 1
            progress.tokens += record["predicted_n"] + record["prompt_n"]
            if spec.phase == "measure":
                tally.records.append(record)
        progress.report("warmup" if wave[0].phase == "warmup" else phase)
    return tally


def _stop_if_cancelled(should_cancel: Callable[[], bool] | None) -> None:
    if should_cancel and should_cancel():
        raise BenchmarkCancelled("benchmark cancelled")


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


def _measure_wave(
    session: EngineSession, wave: list[protocols.RequestSpec]
) -> list[dict[str, Any]]:
    """One request as every protocol measures it, or a concurrency wave all at once."""
    if len(wave) == 1:
        return [session.measure(wave[0])]
    if not isinstance(session, ServerSession):
        raise RunnerError("only llama-server answers several requests at once")
    return session.measure_wave(wave)


def _run_sessions(
    sessions: list[Session],
    *,
    configs: dict[protocols.Side, tuple[BenchmarkConfig, ModelInfo | None]],
    plan: list[protocols.RequestSpec],
    progress: _Progress,
    should_cancel: Callable[[], bool] | None,
    **measure: Any,
) -> dict[protocols.Side, Measured]:
    """Run the scheduled sessions one after another (``runner.schedule``) and join each side's
    (``runner.assembly.join_sessions``)."""
    specs = [spec for spec in plan if spec.phase == "measure"]
    records: dict[protocols.Side, dict[int, dict[str, Any]]] = defaultdict(dict)
    parts: dict[protocols.Side, list[Measured]] = defaultdict(list)
    margins: dict[int, list[Divergence] | None] = {}
    for session in sessions:
        # Between sessions too: a cancelled run loads no further engine.
        _stop_if_cancelled(should_cancel)
        config, draft = configs[session.side]
        margins_pass = _stage_margins(session, specs, records)
        part = _run_one_config(
            config,
            draft=draft,
            plan=session.plan,
            slots=session.slots,
            progress=progress,
            phase="baseline" if session.side == "baseline" else "measuring",
            should_cancel=should_cancel,
            margins=margins_pass,
            **measure,
        )
        records[session.side] |= dict(zip(session.measured, part.records, strict=True))
        margins |= dict(zip(session.margin_indices or [], part.divergences or [], strict=True))
        parts[session.side].append(part)
    joined = {
        side: join_sessions(own, records[side], {}, requests=0) for side, own in parts.items()
    }
    if "baseline" in parts:
        joined["baseline"] = join_sessions(
            parts["baseline"], records["baseline"], margins, requests=len(specs)
        )
    return joined


def _stage_margins(
    session: Session,
    specs: list[protocols.RequestSpec],
    records: dict[protocols.Side, dict[int, dict[str, Any]]],
) -> _Margins | None:
    """The margin pass of a stage's last baseline session: every measured request of the stage,
    the baseline's records from this and its earlier sessions, the speculative outputs; None
    for every other session."""
    indices = session.margin_indices
    if indices is None:
        return None

    def take(engine_session: EngineSession, own: list[dict[str, Any]]) -> list[list[Divergence]]:
        baseline = records["baseline"] | dict(zip(session.measured, own, strict=True))
        return _margin_pass(
            engine_session,
            [specs[index] for index in indices],
            [baseline[index] for index in indices],
            [records["speculative"][index]["output_tokens"] for index in indices],
        )

    return take


def _engine_for(
    config: BenchmarkConfig, engine: Engine | None, *, target: ModelInfo, draft: ModelInfo | None
) -> Engine:
    """The engine the config runs on, checked: one a result can record, and (multi-GPU) one
    whose flags and host can place the config (``check_gpu_placement``)."""
    if config.engine == "llama-cpp-python":
        from runner.engines.llama_cpp_python import describe_engine

        engine = describe_engine()
    else:
        engine = engine or locate()
    _recordable(EngineInfo, engine.as_dict(), EngineBuildError, f"engine {engine.server_path}")
    if config.engine == "llama-server" and config.uses_gpu_placement:
        check_gpu_placement(config, engine=engine, target=target, draft=draft)
    return engine


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
    interleaved with it in ``rounds`` rounds of ABBA order (``runner.schedule``)."""
    if rounds < 1:
        raise RunnerError(f"a paired run needs at least one round, not {rounds}")
    started_at = datetime.now(UTC)
    target, draft = check_models(config, models_dir=Path(models_dir))
    engine = _engine_for(config, engine, target=target, draft=draft)
    # Plan: the protocol's requests, and the engine sessions that send them. Paired, a graded
    # pair's baseline takes its top-2 margins exactly where the two outputs diverged.
    pair = with_baseline and config.is_speculative
    plan = protocols.plan_requests(config, vocab_size=target.vocab_size or 256)
    sessions = schedule(
        config, plan, paired=pair, graded=pair and not config.is_synthetic, rounds=rounds
    )
    # Measure.
    sides = _run_sessions(
        sessions.sessions,
        configs={"speculative": (config, draft), "baseline": (config.baseline(), None)},
        plan=plan,
        progress=_Progress(sessions.requests, progress),
        should_cancel=should_cancel,
        engine=engine,
        target=target,
        request_timeout_s=request_timeout_s,
        start_timeout_s=start_timeout_s,
    )
    # Assemble.
    run = Run(
        engine=engine,
        target=target,
        started_at=started_at,
        finished_at=datetime.now(UTC),
        token_budget=protocols.token_budget(config, with_baseline=pair, rounds=rounds),
        paired_rounds=sessions.rounds,
        system=system_info(),
    )
    return assemble_result(config, sides, run=run, draft=draft)
