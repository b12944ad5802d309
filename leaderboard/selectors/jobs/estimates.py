"""What the submit form can tell before anything runs: which drafts fit which target, how long a
job will hold the GPU, and whether a stored config can be run again here.

- `draft_compatibility`: for each registered target and each speculative type that needs a
  check, why a registered draft (or the type itself) cannot run, from the runner's own pair
  checks (`runner.compatibility.pair_problems`) on the metadata read at registration.
- `gpu_time_estimate`: seconds a token budget takes at this hardware's measured speed for a
  target: the pooled prompt and decode speeds of the target's measured baseline requests there.
- `rerun_source`: a stored config as a runner config the form can fill in, or why it cannot be
  run on this site (an imported config, a model that is not registered).
- `submission_cost`: what the submit form's live estimate says a config would cost: the job's
  token budget (or, while the rest of the form is refused, the protocol's own), whether it
  measures its paired baseline beside it, and its GPU time in seconds and in words
  (`duration_text`), and whether the target's output is known to loop on these settings
  (`known_loops`: its degenerate runs of the same workload); `submission_models` finds the
  target and hardware the form names.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from django.db.models import Count, Sum
from pydantic import ValidationError

from leaderboard.models import (
    SELF_REPORTED_UPLOAD_SOURCE,
    Config,
    Hardware,
    Job,
    ModelFile,
    RequestRecord,
    Run,
)
from leaderboard.selectors.evidence.catalogue import registered_models, servable_hardware
from runner.compatibility import max_dflash_n_max, pair_problems
from runner.config import (
    DRAFT_MODEL_TYPES,
    SELF_DRAFT_TYPES,
    BenchmarkConfig,
    parse_stored_config,
)
from runner.errors import ConfigError
from runner.protocols import job_token_budget, token_budget


def _pair_problem(target: ModelFile, draft: ModelFile | None, spec_type: str) -> str | None:
    try:
        config = BenchmarkConfig.model_validate(
            {
                "target_model": target.path,
                "draft_model": draft.path if draft else None,
                "spec_types": [spec_type],
            }
        )
    except ValidationError:
        return None  # not a pair the schema takes at all; the form says why on submit
    problems = pair_problems(config, target.model_info(), draft.model_info() if draft else None)
    messages = problems.get("draft_model" if draft else "spec_types")
    return messages[0] if messages else None


def draft_compatibility() -> dict:
    """Why pairs cannot run, for the form to grey out: `drafts[target][spec_type][draft]` and
    `types[target][spec_type]` (self-drafting types) hold a reason only where there is one;
    `n_max[draft]` is a DFlash draft's largest n_max."""
    targets = list(ModelFile.objects.filter(role=ModelFile.Role.TARGET))
    models = list(ModelFile.objects.all())
    drafts: dict[str, dict[str, dict[str, str]]] = {}
    types: dict[str, dict[str, str]] = {}
    for target in targets:
        for spec_type in DRAFT_MODEL_TYPES:
            reasons = {
                draft.path: reason
                for draft in models
                if (reason := _pair_problem(target, draft, spec_type))
            }
            if reasons:
                drafts.setdefault(target.path, {})[spec_type] = reasons
        for spec_type in SELF_DRAFT_TYPES:
            if reason := _pair_problem(target, None, spec_type):
                types.setdefault(target.path, {})[spec_type] = reason
    n_max = {
        model.path: max_dflash_n_max(model.model_info())
        for model in models
        if model.architecture == "dflash"
    }
    return {"drafts": drafts, "types": types, "n_max": n_max}


@dataclass(frozen=True)
class GpuTimeEstimate:
    """Seconds a budget takes at measured speeds, or why it is unknown; `token_seconds` is the
    budget at those speeds alone, `seconds` that times `job_ratio`, the median of what this
    target's latest finished jobs on the hardware took over their own token seconds (server
    start, model loading, warm-ups and the paired baseline included), from `jobs_timed` jobs."""

    known: bool
    seconds: float | None = None
    prompt_tokens_per_second: float | None = None
    decode_tokens_per_second: float | None = None
    requests_measured: int = 0
    reason: str = ""
    token_seconds: float | None = None
    job_ratio: float = 1.0
    jobs_timed: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def measured_speed(*, target: ModelFile, hardware: Hardware) -> dict:
    """The pooled prompt and decode speeds of the target's measured baseline requests on this
    hardware: tokens over milliseconds summed across requests (the runner's own definitions)."""
    totals = RequestRecord.objects.filter(
        phase="measure",
        run__hardware=hardware,
        run__self_reported=False,
        run__config__target=target,
        run__config__spec_label="none",
        run__config__synthetic=False,
        prompt_ms__gt=0,
        predicted_ms__gt=0,
    ).aggregate(
        requests=Count("id"),
        prompt_n=Sum("prompt_n"),
        prompt_ms=Sum("prompt_ms"),
        predicted_n=Sum("predicted_n"),
        predicted_ms=Sum("predicted_ms"),
    )
    if not totals["requests"] or not totals["prompt_n"] or not totals["predicted_n"]:
        return {"requests": 0}
    return {
        "requests": totals["requests"],
        "prompt_tokens_per_second": totals["prompt_n"] / totals["prompt_ms"] * 1000,
        "decode_tokens_per_second": totals["predicted_n"] / totals["predicted_ms"] * 1000,
    }


def gpu_time_estimate(
    *, target: ModelFile | None, hardware: Hardware | None, budget: dict[str, int]
) -> GpuTimeEstimate:
    """How long the budget's prompt and generated tokens take at the target's measured baseline
    speed on this hardware (speculation usually takes less); unknown without measurements."""
    if target is None or hardware is None:
        return GpuTimeEstimate(known=False, reason="choose a registered target and hardware")
    speed = measured_speed(target=target, hardware=hardware)
    if not speed["requests"]:
        return GpuTimeEstimate(
            known=False,
            reason=f"no measured baseline of {target.name} on {hardware.gpu_name} yet",
        )
    seconds = _token_seconds(budget, speed)
    ratios = _job_time_ratios(target=target, hardware=hardware, speed=speed)
    ratio = statistics.median(ratios) if ratios else 1.0
    return GpuTimeEstimate(
        known=True,
        seconds=seconds * ratio,
        prompt_tokens_per_second=speed["prompt_tokens_per_second"],
        decode_tokens_per_second=speed["decode_tokens_per_second"],
        requests_measured=speed["requests"],
        token_seconds=seconds,
        job_ratio=ratio,
        jobs_timed=len(ratios),
    )


def _token_seconds(budget: dict[str, int], speed: dict) -> float:
    return (
        budget["prompt_tokens"] / speed["prompt_tokens_per_second"]
        + budget["generated_tokens"] / speed["decode_tokens_per_second"]
    )


# How many of a target's latest finished jobs on a hardware time its estimates.
JOBS_TIMED = 10


def _job_time_ratios(*, target: ModelFile, hardware: Hardware, speed: dict) -> list[float]:
    """For this target's latest succeeded jobs on this hardware: the job's wall time (its
    start to its end on the host) over its own budget's token seconds at this speed."""
    jobs = (
        Job.objects.filter(
            hardware=hardware,
            config__target=target,
            status=Job.Status.SUCCEEDED,
            started_at__isnull=False,
            finished_at__isnull=False,
        )
        .order_by("-finished_at")
        .values_list("started_at", "finished_at", "config__canonical")[:JOBS_TIMED]
    )
    ratios = []
    for started, finished, canonical in jobs:
        if started is None or finished is None:
            continue  # never: the query keeps only started and finished jobs
        try:
            config = parse_stored_config(canonical)
        except ConfigError:
            continue  # an imported config: nothing the runner would plan
        token_seconds = _token_seconds(job_token_budget(config), speed)
        if token_seconds > 0 and finished > started:
            ratios.append((finished - started).total_seconds() / token_seconds)
    return ratios


@dataclass(frozen=True)
class ThreadsAdvice:
    """The engine threads (llama-server's -t) the submit form starts from on a host, and why;
    None is the engine's own default, every core."""

    threads: int | None
    reason: str

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _threads_words(threads: int | None) -> str:
    return "all cores" if threads is None else f"-t {threads}"


def _fastest_measured_threads(hardware: Hardware) -> ThreadsAdvice | None:
    """The thread count whose baseline requests decoded fastest on this host, for the target
    measured there at the most thread counts (then with the most requests); None unless some
    target was measured at two or more."""
    rows = (
        RequestRecord.objects.filter(
            phase="measure",
            run__hardware=hardware,
            run__self_reported=False,
            run__config__spec_label="none",
            run__config__synthetic=False,
            predicted_ms__gt=0,
        )
        .values("run__config__target__name", "run__config__canonical__threads")
        .annotate(requests=Count("id"), tokens=Sum("predicted_n"), ms=Sum("predicted_ms"))
    )
    by_target: dict[str, dict[int | None, tuple[float, int]]] = {}
    for row in rows:
        threads = row["run__config__canonical__threads"]
        speed = row["tokens"] / row["ms"] * 1000 if row["tokens"] else 0.0
        by_target.setdefault(row["run__config__target__name"], {})[threads] = (
            speed,
            row["requests"],
        )
    compared = {target: speeds for target, speeds in by_target.items() if len(speeds) > 1}
    if not compared:
        return None
    target, speeds = max(
        compared.items(),
        key=lambda item: (len(item[1]), sum(n for _, n in item[1].values())),
    )
    ordered = sorted(speeds.items(), key=lambda item: item[1][0], reverse=True)
    (best, (best_speed, _)), others = ordered[0], ordered[1:]
    against = ", ".join(f"{speed:.1f} at {_threads_words(t)}" for t, (speed, _) in others)
    requests = sum(n for _, n in speeds.values())
    return ThreadsAdvice(
        best,
        f"fastest measured on this host: {best_speed:.1f} decode tok/s at "
        f"{_threads_words(best)}, against {against} ({target}'s baselines, {requests} requests)",
    )


@dataclass(frozen=True)
class SubmitOffer:
    """What the submit form offers, read once for a request: the hardware kinds it may run on
    (slug, label) with each one's threads advice, the registered targets (path, name) with their
    training contexts (which the sweeps' lengths are fitted to), and the drafts."""

    hardware: tuple[tuple[str, str], ...]
    threads_advice: dict[str, ThreadsAdvice]
    default_advice: ThreadsAdvice
    targets: tuple[tuple[str, str], ...]
    training_contexts: dict[str, int | None]
    drafts: tuple[tuple[str, str], ...]


def submit_offer() -> SubmitOffer:
    """The submit form's choices and advice, finished: the form itself reads nothing."""
    hardware = list(servable_hardware())
    targets = list(registered_models(role="target"))
    return SubmitOffer(
        hardware=tuple((h.slug, str(h)) for h in hardware),
        threads_advice={h.slug: threads_advice(hardware=h) for h in hardware},
        default_advice=threads_advice(hardware=None),
        targets=tuple((m.path, m.name) for m in targets),
        training_contexts={m.path: m.model_info().context_length for m in targets},
        drafts=tuple((m.path, f"{m.name} ({m.architecture})") for m in registered_models()),
    )


def host_system(*, hardware: Hardware) -> dict:
    """What this hardware's latest measured run recorded of its machine (cpu_count, gpu, ...)."""
    provenance = (
        Run.objects.filter(hardware=hardware, self_reported=False)
        .order_by("-pk")
        .values_list("provenance", flat=True)
        .first()
    )
    system = provenance.get("system") if isinstance(provenance, dict) else None
    return system if isinstance(system, dict) else {}


def is_cpu_host(*, hardware: Hardware, system: dict) -> bool:
    """Whether the host decodes on its CPU: its runs saw no GPU, or (before any run) it was
    registered as a CPU kind: with its CPU model (`Hardware.cpu_model`, what the door checks a
    CPU-only result against), or by the name seed_demo gives such hardware ("CPU <model>")."""
    if system:
        return not system.get("gpu")
    return not hardware.gpus and (bool(hardware.cpu_model) or hardware.gpu_name.startswith("CPU "))


def threads_advice(*, hardware: Hardware | None) -> ThreadsAdvice:
    """The thread count the submit form starts from on this host: the fastest measured there;
    else 1 on a CPU host of at most two cores, where the web server and workers share the
    cores and two engine threads spin waiting on each other; else the engine's default."""
    if hardware is None:
        return ThreadsAdvice(None, "the engine's default (all cores)")
    measured = _fastest_measured_threads(hardware)
    if measured is not None:
        return measured
    system = host_system(hardware=hardware)
    cores = system.get("cpu_count")
    if is_cpu_host(hardware=hardware, system=system) and (cores is None or cores <= 2):
        return ThreadsAdvice(
            1,
            f"a CPU host of {cores or 'unknown'} cores, shared with the site's own processes: "
            "one engine thread decodes fastest there (two spin waiting on each other); no "
            "thread counts compared on this host yet",
        )
    return ThreadsAdvice(
        None, "the engine's default (all cores): no thread counts compared on this host yet"
    )


@dataclass(frozen=True)
class RerunSource:
    """A stored config as the runner reads it, or the reason it cannot be run here."""

    config: BenchmarkConfig | None
    problem: str = ""


def rerun_source(*, config: Config) -> RerunSource:
    """The runner config behind a stored config, if this site can run it: a runner config whose
    target (and draft) are registered model files."""
    canonical = dict(config.canonical)
    # An uploaded result's config is the runner's, tagged with where it came from.
    if canonical.get("source") == SELF_REPORTED_UPLOAD_SOURCE:
        del canonical["source"]
    try:
        parsed = parse_stored_config(canonical)
    except ConfigError:
        return RerunSource(
            None,
            "This config was imported (it is not a runner config), so there is nothing to run "
            "again; submit a config of your own instead.",
        )
    references = [parsed.target_model] + ([parsed.draft_model] if parsed.draft_model else [])
    registered = set(ModelFile.objects.filter(path__in=references).values_list("path", flat=True))
    # A self-drafted config names one file twice: it is missing once.
    missing = list(dict.fromkeys(r for r in references if r not in registered))
    if missing:
        return RerunSource(
            None,
            f"It cannot be run here: {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not a registered model on this site. "
            "An admin registers model files; then this config can be run again.",
        )
    return RerunSource(parsed)


def submission_models(
    *, target_path: str | None, hardware_slug: str | None
) -> tuple[ModelFile | None, Hardware | None]:
    """The registered target model and the servable hardware a form names, each None where it
    names none (or one this site does not have)."""
    targets = registered_models(role=ModelFile.Role.TARGET)
    target = targets.filter(path=target_path).first() if target_path else None
    hardware = servable_hardware().filter(slug=hardware_slug).first() if hardware_slug else None
    return target, hardware


def submission_cost(
    *,
    config: BenchmarkConfig | None,
    protocol_config: BenchmarkConfig | None,
    target: ModelFile | None,
    hardware: Hardware | None,
) -> dict:
    """What submitting would cost: the job's token budget (`config`, with its paired baseline
    where the job measures one beside it) or, with no config to cost, the protocol's own
    (`protocol_config`: the target with the form's protocol and nothing else); the GPU time
    that budget takes at the target's measured speed on the hardware, in words too."""
    budget = None
    if config is not None:
        budget = job_token_budget(config)
    elif protocol_config is not None:
        budget = token_budget(protocol_config)
    gpu_time = (
        gpu_time_estimate(target=target, hardware=hardware, budget=budget).as_dict()
        if budget
        else None
    )
    return {
        "budget": budget,
        "budget_scope": "job" if config else "protocol",
        "loops": known_loops(config=config or protocol_config, target=target),
        # A speculative job may measure its paired baseline beside it, at the same cost again.
        "with_baseline": bool(config and budget and budget != token_budget(config)),
        "gpu_time": gpu_time,
        "gpu_time_text": duration_text(gpu_time["seconds"])
        if gpu_time and gpu_time["known"]
        else "",
        # A CPU host's job holds its CPU, and the estimate says so.
        "time_kind": "CPU"
        if hardware is not None
        and is_cpu_host(hardware=hardware, system=host_system(hardware=hardware))
        else "GPU",
    }


# What a protocol's figure does not depend on (services.configs.MEASUREMENT_COUNTS): configs
# that differ only in these measured the same workload.
_COUNTS = ("name", "rounds", "warmup", "seed", "runs", "requests")


def _workload(protocol: object) -> dict:
    return (
        {k: v for k, v in protocol.items() if k not in _COUNTS}
        if isinstance(protocol, dict)
        else {}
    )


def known_loops(*, config: BenchmarkConfig | None, target: ModelFile | None) -> dict | None:
    """Whether this target's output degenerated (looped or stopped early) on these settings
    before: its measured runs of the same workload (the protocol and its parameters, how many
    runs or warm-ups left out), any draft; None where none is known."""
    if config is None or target is None:
        return None
    wanted = config.canonical()["protocol"]
    runs = (
        Run.objects.filter(config__target=target, config__protocol=wanted["name"])
        .exclude(self_reported=True)
        .values_list("pk", "degenerate", "config__canonical")
        .order_by("-pk")[:500]
    )
    same = [
        (pk, degenerate)
        for pk, degenerate, canonical in runs
        if isinstance(canonical, dict) and _workload(canonical.get("protocol")) == _workload(wanted)
    ]
    looped = [pk for pk, degenerate in same if degenerate]
    if not looped:
        return None
    return {"looped": len(looped), "runs": len(same), "latest_run": looped[0]}


def duration_text(seconds: float) -> str:
    """'about 40 s', 'about 3 min', 'about 1 h 20 min'."""
    if seconds < 60:
        return f"about {max(round(seconds), 1)} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min"
    return f"about {minutes // 60} h {minutes % 60} min"
