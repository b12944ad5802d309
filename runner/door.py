"""The door: what a result must be, beyond agreeing with itself, to be recorded on a hardware kind.

``runner.evidence`` refuses a file whose figures its own records contradict; a file can agree
with itself and still be impossible, relabelled or incomplete. ``door_problem`` holds a whole
result (the measured section and its baseline) against physics, its own provenance and its
protocol's plan, on the hardware kind it is to be recorded under, and names the first rule it
breaks, the section or request and the figure. Every road a result takes into the site (a GPU
host's result, ``manage.py import_runner_results``, an upload) asks it once before storing
anything, and a refused result is stored nowhere. The rules and their margins, by name
(docs/VERDICTS.md, "The door"):

- ``physics.decode_above_roofline``: a decode rate above the memory-bandwidth ceiling of the
  bytes one step reads (``runner.roofline.derived_roofline``) by more than
  ``ABOVE_CEILING_FRACTION``, the bandwidth being the kind's registered figure
  (``runner.roofline.registered_bandwidth``), never the file's;
- ``physics.energy_below_idle``: a request (or a concurrent wave) whose energy over its time is
  below the kind's idle floor (``runner.energy.idle_floor_watts``, per GPU);
- ``physics.peak_memory_below_model_bytes``: a GPU peak below ``HELD_SHARE`` of the bytes of the
  model files the config puts wholly on the GPUs;
- ``provenance.argv_mismatch``: the command that ran (``provenance.argv``) differs from the one
  the config implies (``runner.engines.server.server_argv``) in a speculative, synthetic or model
  flag;
- ``provenance.system_mismatch``: the GPUs the file says it ran on are not the kind's, or, on
  a CPU kind (one that knows its CPU model), the CPU the file names is not the kind's;
- ``completeness.missing_request``: a point of the protocol's plan measured fewer requests than
  it plans;
- ``completeness.short_generation``: a measured request generated other than the tokens its plan
  asks for (an early stop at end-of-sequence only where the plan's request allows one).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runner import protocols
from runner.energy import idle_floor_watts
from runner.engines.build import Engine
from runner.engines.server import server_argv
from runner.errors import RunnerError
from runner.provenance import normalise_cpu_name, normalise_gpu_name
from runner.results import (
    BenchmarkResult,
    EngineInfo,
    ModelFileInfo,
    RequestRecord,
    Section,
    SystemInfo,
)
from runner.results.sections import ENERGY_SLACK_SECONDS, PLAN_VOCAB_SIZE
from runner.roofline import (
    ABOVE_CEILING_FRACTION,
    FASTEST_BANDWIDTH,
    REGISTERED_BANDWIDTH,
    derived_roofline,
    registered_bandwidth,
)

# A GPU holds at least this share of the model files it runs whole: llama.cpp keeps the token
# embedding table in host memory (2.6% of a 27B Q4_K_M file), and a GGUF file's header and
# metadata are not loaded as weights.
HELD_SHARE = 0.9
# Where a file does not give a target's bytes per token, the ceiling reads this share of its
# file, which lies below the weights one step reads (the table's one row and the header apart).
WEIGHT_SHARE_OF_FILE = 0.9
# llama.cpp puts every layer on the GPU with -ngl above the model's block count (the output
# layer is one more); without a block count only its "all" value, 999, says so.
ALL_LAYERS = 999

# The llama-server flags a result's command must carry exactly as its config implies: the
# models, every speculative flag (n_max among them) and the synthetic acceptance flags.
CHECKED_FLAGS = (
    "-m",
    "-md",
    "--spec-type",
    "--spec-draft-n-max",
    "--spec-draft-n-min",
    "--spec-draft-p-min",
    "-ngld",
    "--spec-draft-backend-sampling",
    "--no-spec-draft-backend-sampling",
    "--spec-synth-len",
    "--spec-synth-rates",
    "--spec-draft-device",
)
# llama-server flags that take no value, as server_argv writes them.
SWITCHES = frozenset(
    {
        "--metrics",
        "--no-webui",
        "-bs",
        "--no-repack",
        "--spec-draft-backend-sampling",
        "--no-spec-draft-backend-sampling",
    }
)
_FLAG = re.compile(r"--?[A-Za-z][\w-]*")
# The in-process engine's command (runner.engines.llama_cpp_python) names its arguments.
IN_PROCESS = "llama_cpp.Llama"


@dataclass(frozen=True)
class HardwareKind:
    """The hardware kind a result is to be recorded under: its name in words, each GPU's
    normalised name, in the engine's order (a CPU host's kind names its CPU as its one "GPU"),
    and, for a CPU kind, its CPU model as the runner's provenance reads it (empty while unknown)."""

    label: str
    gpus: tuple[str, ...]
    cpu: str = ""

    def bandwidth(self, *, split_mode: str) -> int:
        """The fastest the kind can read memory for one decoding step: one GPU's bandwidth (the
        fastest of the kind's) when layers run one GPU after another, their sum under a row
        split, which reads every GPU at once."""
        figures = [registered_bandwidth(name) for name in self.gpus] or [FASTEST_BANDWIDTH]
        return sum(figures) if split_mode == "row" else max(figures)

    def idle_watts(self) -> float:
        """The least the kind's GPUs draw together while awake."""
        return sum(idle_floor_watts(name) for name in self.gpus)


def door_problem(result: BenchmarkResult, *, kind: HardwareKind) -> str | None:
    """The first rule a result breaks on this hardware kind, as "rule: what and where", or None."""
    sections: list[tuple[str, Section]] = [("baseline", result.baseline)] if result.baseline else []
    sections.append(("the measured config", result))
    problem = _system_problem(result, kind=kind)
    for name, section in sections:
        if problem:
            break
        problem = (
            _argv_problem(section, engine=result.engine)
            or _completeness_problem(section)
            or _roofline_problem(section, run=result, kind=kind)
            or _energy_problem(section, kind=kind)
            or _memory_problem(section)
        )
        if problem and section is not result:
            problem = problem.replace(": ", f": {name}: ", 1)
    return problem


# --- Provenance ----------------------------------------------------------------------------


def _file_gpus(system: SystemInfo) -> list[str] | None:
    """The GPUs the engine could use, as the file names them; None where it names none."""
    if system.gpus:
        return [normalise_gpu_name(gpu.name) for gpu in system.gpus]
    if system.gpu:
        # Files before ``gpus``: gpu_count counted the host's GPUs, not the engine's.
        return [normalise_gpu_name(system.gpu)]
    return None


def _system_problem(result: BenchmarkResult, *, kind: HardwareKind) -> str | None:
    system = result.provenance.system
    named = _file_gpus(system)
    if named is None:
        return _cpu_problem(system.cpu, kind=kind)
    if system.gpus:
        same = named == list(kind.gpus)
    else:
        same = bool(kind.gpus) and set(kind.gpus) == set(named)
    if same:
        return None
    count = len(named)
    return (
        f"provenance.system_mismatch: the file ran on {' + '.join(named)} ({count} GPU"
        f"{'s' if count != 1 else ''}), but it is recorded under {kind.label}"
    )


def _cpu_problem(cpu: str | None, *, kind: HardwareKind) -> str | None:
    """Whether a file that names no GPU may be recorded under this kind: not under a registered
    GPU, and under a CPU kind only with the kind's CPU model."""
    registered_gpu = next((gpu for gpu in kind.gpus if gpu in REGISTERED_BANDWIDTH), None)
    if cpu and registered_gpu:
        return (
            f"provenance.system_mismatch: the file ran on {cpu} with no GPU, "
            f"but it is recorded under {kind.label}"
        )
    if not kind.cpu:
        return None
    if not cpu:
        return (
            "provenance.system_mismatch: the file names neither a GPU nor a CPU, but it is "
            f"recorded under {kind.label}, a CPU host of {kind.cpu}"
        )
    if normalise_cpu_name(cpu) != normalise_cpu_name(kind.cpu):
        return (
            f"provenance.system_mismatch: the file ran on {cpu} with no GPU, but it is recorded "
            f"under {kind.label}, a CPU host of {kind.cpu}"
        )
    return None


def _flags(argv: Sequence[str]) -> dict[str, str | None]:
    """A llama-server command's flags and their values (None for a switch)."""
    flags: dict[str, str | None] = {}
    position = 1
    while position < len(argv):
        part = argv[position]
        position += 1
        if not _FLAG.fullmatch(part):
            continue
        value = None
        if part not in SWITCHES and position < len(argv) and not _FLAG.fullmatch(argv[position]):
            value = argv[position]
            position += 1
        flags[part] = value
    return flags


def _shown_flag(flag: str, value: str | None) -> str:
    return flag if value is None else f"{flag} {value}"


def _argv_problem(section: Section, *, engine: EngineInfo) -> str | None:
    """Whether the command that ran is the one the config implies, flag by checked flag."""
    argv = list(section.provenance.argv)
    models = section.provenance.models
    if argv and argv[0] == IN_PROCESS:
        return None  # Described, not run: runner.engines.llama_cpp_python names its arguments.
    try:
        implied = server_argv(
            section.config,
            engine=Engine(
                server_path=argv[0] if argv else "llama-server",
                release=engine.release,
                backend=engine.backend,
                build_flags=list(engine.build_flags),
            ),
            target_path=Path(models.target.path),
            draft_path=Path(models.draft.path) if models.draft else None,
            port=0,
        )
    except RunnerError as error:
        return f"provenance.argv_mismatch: the config implies no command on this engine ({error})"
    ran, wanted = _flags(argv), _flags(implied)
    return next(
        (found for flag in CHECKED_FLAGS if (found := _flag_problem(flag, ran, wanted))), None
    )


def _flag_problem(
    flag: str, ran: dict[str, str | None], wanted: dict[str, str | None]
) -> str | None:
    """Whether one checked flag of the command that ran is the one the config implies."""
    if flag not in ran and flag not in wanted:
        return None
    if flag not in ran:
        return (
            "provenance.argv_mismatch: the command that ran lacks "
            f"{_shown_flag(flag, wanted[flag])}, which the config implies"
        )
    if flag not in wanted:
        return (
            f"provenance.argv_mismatch: the command that ran has {_shown_flag(flag, ran[flag])}"
            ", which the config does not imply"
        )
    if ran[flag] != wanted[flag]:
        return (
            f"provenance.argv_mismatch: the command that ran has {flag} {ran[flag]}, but the "
            f"config implies {flag} {wanted[flag]}"
        )
    return None


# --- Completeness --------------------------------------------------------------------------


def _completeness_problem(section: Section) -> str | None:
    """Whether every request the plan measures was measured, each generating what it asked."""
    planned: dict[int, list[protocols.RequestSpec]] = {}
    for spec in protocols.plan_requests(section.config, vocab_size=PLAN_VOCAB_SIZE):
        if spec.phase == "measure":
            planned.setdefault(spec.point, []).append(spec)
    if found := _missing_problem(section, planned):
        return found
    for position, record in enumerate(section.requests):
        if record.phase == "measure" and record.point in planned:
            if found := _generation_problem(position, record, planned[record.point]):
                return found
    return None


def _missing_problem(
    section: Section, planned: dict[int, list[protocols.RequestSpec]]
) -> str | None:
    """Whether a point of the plan measured fewer requests than it plans."""
    measured = Counter(record.point for record in section.requests if record.phase == "measure")
    for point, specs in sorted(planned.items()):
        if measured[point] < len(specs):
            return (
                f"completeness.missing_request: point {point} measured "
                f"{measured[point]} of the {len(specs)} requests the protocol plans"
            )
    return None


def _generation_problem(
    position: int, record: RequestRecord, specs: list[protocols.RequestSpec]
) -> str | None:
    """Whether a measured request generated the tokens its point's plan asks for (fewer only
    where the plan's requests may stop at end-of-sequence)."""
    asked = max(spec.output_tokens for spec in specs)
    early = all(not spec.body()["ignore_eos"] for spec in specs)
    if record.predicted_n == asked or (early and record.predicted_n < asked):
        return None
    return (
        f"completeness.short_generation: requests.{position} generated "
        f"{record.predicted_n} of the {asked} tokens the protocol asks for"
        + ("" if early else ", and its requests may not stop at end-of-sequence")
    )


# --- Physics -------------------------------------------------------------------------------


def _roofline_problem(section: Section, *, run: BenchmarkResult, kind: HardwareKind) -> str | None:
    """Whether a decode rate passes the ceiling of the kind's bandwidth by more than the margin."""
    bandwidth = kind.bandwidth(split_mode=section.config.split_mode)
    # runner.roofline derives from a result's plain data (the site's stored results too).
    data = section.model_dump(mode="json")
    target = data["provenance"]["models"]["target"]
    if not target.get("weight_bytes_per_token"):
        target["weight_bytes_per_token"] = int(target["size_bytes"] * WEIGHT_SHARE_OF_FILE)
    host = {
        "engine": run.engine.model_dump(mode="json"),
        "provenance": {"system": run.provenance.system.model_dump(mode="json")},
    }
    roofline = derived_roofline(data, run=host, peak_bandwidth_bytes_per_second=bandwidth)
    if roofline is None:
        return None
    for level in roofline.get("levels") or [roofline]:
        fraction = level["fraction"]
        if fraction is None or fraction <= ABOVE_CEILING_FRACTION:
            continue
        where = f" at concurrency {level['concurrency']}" if "concurrency" in level else ""
        rate = "aggregate" if level["rate"] == "aggregate" else "decode"
        return (
            f"physics.decode_above_roofline: {rate} {fraction * level['ceiling_tokens_per_second']:.1f}"
            f" tok/s{where} is {fraction:.2f}x the ceiling of {level['ceiling_tokens_per_second']:.1f}"
            f" tok/s ({bandwidth / 1e12:.3g} TB/s of {kind.label} over {level['bytes_per_step']:,}"
            f" bytes a step at tau {level['tokens_per_step']:.3g}); the margin is "
            f"{ABOVE_CEILING_FRACTION:.2f}x"
        )
    return None


def _energy_problem(section: Section, *, kind: HardwareKind) -> str | None:
    """Whether a request (a concurrent wave together) drew less than the kind's idle floor."""
    watts = kind.idle_watts()
    for name, records in section.request_groups():
        energies = [r.energy_joules for r in records if r.energy_joules is not None]
        if len(energies) < len(records):
            continue
        seconds = max(record.wall_ms for record in records) / 1000.0
        floor = watts * max(seconds - ENERGY_SLACK_SECONDS, 0.0)
        joules = sum(energies)
        if joules < floor:
            return (
                f"physics.energy_below_idle: {name}: {joules:.6g} J in {seconds:.4g} s is "
                f"{joules / seconds:.4g} W, below the idle floor of {kind.label} "
                f"({watts:g} W over its time less {ENERGY_SLACK_SECONDS:g} s: {floor:.6g} J)"
            )
    return None


def _held_on_gpu(layers: int | None, model: ModelFileInfo) -> bool:
    if layers is None:
        return False
    return layers > model.block_count if model.block_count is not None else layers >= ALL_LAYERS


def _memory_problem(section: Section) -> str | None:
    """Whether the GPUs' peak holds the model files the config puts wholly on them."""
    summary, config, models = section.summary, section.config, section.provenance.models
    if summary.memory_kind != "gpu" or summary.peak_memory_bytes is None:
        return None
    placed = ((config.n_gpu_layers, models.target), (config.draft_n_gpu_layers, models.draft))
    held = [model for layers, model in placed if model and _held_on_gpu(layers, model)]
    files = sum(model.size_bytes for model in held)
    if not held or summary.peak_memory_bytes >= HELD_SHARE * files:
        return None
    names = " and ".join(Path(model.path).name for model in held)
    return (
        f"physics.peak_memory_below_model_bytes: summary.peak_memory_bytes "
        f"{summary.peak_memory_bytes:,} is below {HELD_SHARE:.0%} of the {files:,} bytes of "
        f"{names}, which the config puts wholly on the GPUs"
    )
