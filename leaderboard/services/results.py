"""Results into the database: one road for every runner result.

A worker's result for a job, a runner result file an admin imports and a self-reported upload
are all validated by the runner's one result model (`runner.results`) at the door, and every
Run row, these and the seed CSV's alike, is written by `record_run`. The paired baseline's greedy
output decides lossless (never an upload's claim), and the row is refreshed in the same transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from leaderboard import verdicts
from leaderboard.models import (
    SELF_REPORTED_RELEASE,
    SELF_REPORTED_UPLOAD_SOURCE,
    Config,
    EngineBuild,
    Hardware,
    Job,
    ModelFile,
    RequestRecord,
    Run,
)
from leaderboard.services.board import build_flags_key, refresh_leaderboard_entry
from leaderboard.services.configs import (
    config_row,
    digest,
    reporter_identity,
    uploaded_config,
)
from leaderboard.services.errors import DuplicateUploadError, ServiceError
from leaderboard.services.jobs import record_failure
from leaderboard.services.pairing import fill_prompt_sets
from leaderboard.services.registry import register_hardware
from leaderboard.stored_results import request_row
from runner.door import HardwareKind, door_problem
from runner.errors import ResultError
from runner.evidence import derived_speedup
from runner.fidelity import fidelity_grade
from runner.pairing import same_outputs
from runner.protocols import job_token_budget
from runner.provenance import normalise_gpu_name
from runner.results import (
    BenchmarkResult,
    EngineInfo,
    ModelFileInfo,
    ResultSummary,
    Section,
    Statistics,
    SystemInfo,
    load_result,
)
from runner.stats import is_degenerate

logger = logging.getLogger(__name__)

STATISTICS = ("mean", "median", "stdev", "min", "max", "ci95_low", "ci95_high")


def record_run(
    *,
    config: Config,
    hardware: Hardware,
    engine_release: str,
    fields: dict[str, Any],
    requests: Iterable[dict[str, Any]],
    provenance: dict[str, Any],
    raw_result: dict[str, Any],
    job: Job | None = None,
    self_reported: bool = False,
    fingerprint: str | None = None,
    run_name: str = "",
) -> Run:
    """The one writer of Run rows and their request records (call inside a transaction).

    Each request is stored once, as its record (`leaderboard.stored_results.request_row`):
    `raw_result` is stored without its requests."""
    run = Run.objects.create(
        job=job,
        config=config,
        hardware=hardware,
        engine_release=engine_release[:64],
        **fields,
        self_reported=self_reported,
        import_fingerprint=fingerprint,
        run_name=run_name[:200],
        provenance=provenance,
        raw_result={key: value for key, value in raw_result.items() if key != "requests"},
    )
    RequestRecord.objects.bulk_create(RequestRecord(run=run, **row) for row in requests)
    EngineBuild.objects.get_or_create(release=run.engine_release)
    return run


def _statistics(prefix: str, statistics: Statistics) -> dict[str, float | None]:
    """A batch's statistics as Run columns. One request has no spread: its stdev and interval
    are stored null whichever form its file used (older files: 0.0 and [mean, mean])."""
    spread = ("stdev", "ci95_low", "ci95_high") if statistics.n < 2 else ()
    return {
        f"{prefix}_{name}": None if name in spread else getattr(statistics, name)
        for name in STATISTICS
    }


def section_fields(section: Section, *, engine: EngineInfo) -> dict[str, Any]:
    """The Run columns a result section fills, with the definitions the runner used."""
    summary = section.summary
    paired = summary if isinstance(summary, ResultSummary) else None
    return {
        "engine_backend": engine.backend[:32],
        "build_flags_key": build_flags_key(engine.build_flags),
        "tps_definition": Run.Definition.DECODE,
        "n": summary.decode_tokens_per_second.n,
        **_statistics("decode", summary.decode_tokens_per_second),
        **_statistics("e2e", summary.end_to_end_tokens_per_second),
        "ttft_ms_mean": summary.ttft_ms.mean,
        "acceptance_rate": summary.acceptance_rate,
        "tau": summary.tau,
        "draft_tokens": summary.draft_tokens,
        "draft_accepted": summary.draft_accepted,
        "verify_steps": summary.verify_steps,
        "speedup": paired.speedup if paired else None,
        # Derived by the site from the outputs (`_pair_lossless`), never the file's claim.
        "lossless": None,
        # The model checked it against the config: synthetic acceptance is never the model's own.
        "synthetic": section.synthetic,
        "degenerate": summary.degenerate,
        "peak_memory_bytes": summary.peak_memory_bytes,
        "memory_kind": summary.memory_kind or "",
        "gpu_seconds": summary.gpu_seconds,
    }


def section_requests(section: Section) -> list[dict[str, Any]]:
    """The request records of a section, as RequestRecord rows."""
    return [request_row(record) for record in section.requests]


def _sections(result: BenchmarkResult) -> list[tuple[Section, dict[str, Any]]]:
    """The result's sections, baseline first, each with the JSON it is stored and known by.

    A baseline section carries the run-wide parts (schema version, engine, host) of its result,
    so that each stored run is complete on its own.
    """
    whole = result.model_dump(mode="json", exclude_unset=True)
    main = {key: value for key, value in whole.items() if key != "baseline"}
    sections: list[tuple[Section, dict[str, Any]]] = []
    if result.baseline is not None:
        shared = {"schema_version": whole["schema_version"], "engine": whole["engine"]}
        baseline = dict(whole["baseline"]) | shared
        system = whole["provenance"].get("system")
        baseline["provenance"] = dict(baseline["provenance"]) | {"system": system}
        sections.append((result.baseline, baseline))
    sections.append((result, main))
    return sections


def _model_mismatch(job: Job, section: Section) -> str | None:
    models = section.provenance.models
    for role, row, reported in (
        ("target", job.config.target, models.target),
        ("draft", job.config.draft, models.draft),
    ):
        if row is not None and reported is not None and reported.sha256 != row.sha256:
            return f"the worker's {role} model {row.path} differs from the registered file (sha256)"
    return None


def _prompt_hashes(run: Run) -> list[str | None]:
    """The prompts of a run's measured requests, as its result recorded them (None: unknown)."""
    details = run.requests.filter(phase="measure").order_by("index")
    return [found.get("prompt_sha256") for found in details.values_list("details", flat=True)]


def _same_output(run: Run, baseline_run: Run) -> bool | None:
    """Whether a speculative run produced the baseline's greedy output, request by request.

    Unknown (None) when the two did not answer the same prompts: n-gram configs vary the prompt
    per run, while a baseline measured on its own answers the protocol's fixed prompt.
    """
    mine, theirs = _prompt_hashes(run), _prompt_hashes(baseline_run)
    prompts = {}
    if any(mine) or any(theirs):
        prompts = {"prompt_hashes": mine, "baseline_prompt_hashes": theirs}
    return same_outputs(
        list(run.requests.values_list("output_sha256", flat=True)),
        list(baseline_run.requests.values_list("output_sha256", flat=True)),
        **prompts,
    )


def _update_hardware_from(hardware: Hardware, system: SystemInfo | None) -> None:
    """Fill what a kind lacks from the host of a result the door let in (its CPU model too)."""
    if system is None:
        return
    _fix_cpu_model(hardware, system)
    changes: dict[str, Any] = {
        name: str(value)
        for name, value in (
            ("driver", system.driver),
            ("cuda", system.cuda),
            ("host", system.hostname),
        )
        if value and not getattr(hardware, name)
    }
    if not hardware.memory_bytes and system.gpu_memory_bytes:
        changes["memory_bytes"] = system.gpu_memory_bytes
    if changes:
        Hardware.objects.filter(pk=hardware.pk).update(**changes)


def _fix_cpu_model(hardware: Hardware, system: SystemInfo | None) -> None:
    """A kind registered without its CPU model takes the CPU of the first result recorded under
    it that names no GPU, and keeps it: the door holds every later CPU-only result to it."""
    if system is None or not system.cpu or system.gpus or system.gpu or hardware.cpu_model:
        return
    # Guarded: of two first results arriving together, one CPU model is kept.
    Hardware.objects.filter(pk=hardware.pk, cpu_model="").update(cpu_model=system.cpu[:200])
    hardware.refresh_from_db(fields=["cpu_model"])


def door_refusal(result: BenchmarkResult, *, hardware: Hardware) -> str | None:
    """Why the door (``runner.door``) refuses a whole result on this hardware kind, or None."""
    # The CPU model as stored now: an earlier result may have fixed it since `hardware` was read.
    hardware.refresh_from_db(fields=["cpu_model"])
    kind = HardwareKind(
        label=hardware.label,
        gpus=tuple(normalise_gpu_name(gpu["name"] or "") for gpu in hardware.gpu_list()),
        cpu=hardware.cpu_model,
    )
    return door_problem(result, kind=kind)


def record_result(*, job_id: int, result: dict[str, Any]) -> Run | None:
    """Store a worker's result for a job as its one Run; repeats and invalid results are ignored
    (an invalid result, or one the door refuses, fails the job with its one-line reason)."""
    try:
        typed = load_result(result)
    except ResultError as error:
        record_failure(job_id=job_id, error=str(error))
        return None
    job = Job.objects.select_related("hardware").filter(id=job_id).first()
    if (
        job is not None
        and job.is_active
        and (refusal := door_refusal(typed, hardware=job.hardware))
    ):
        record_failure(job_id=job_id, error=refusal)
        return None
    sections = _sections(typed)
    section, stored = sections[-1]
    # A speculative job measures its paired baseline in the same invocation (services.jobs
    # measures_own_baseline): that section is stored as a run of the baseline config too.
    baseline = sections[0] if len(sections) == 2 else None
    return _record_job_run(
        job_id=job_id, section=section, stored=stored, result=typed, baseline=baseline
    )


def _graded_fidelity(section: Section, *, result: BenchmarkResult) -> str:
    """The fidelity verdict (runner.fidelity) of a result's speculative section against the
    baseline measured in the same invocation, from its request records; empty without one."""
    if result.baseline is None or section is result.baseline or section.synthetic:
        return ""
    grade = fidelity_grade([r.model_dump() for r in section.requests if r.phase == "measure"])
    if grade is None:
        return ""
    return verdicts.graded_fidelity(grade.verdict, backend=result.engine.backend)


def _record_job_run(
    *,
    job_id: int,
    section: Section,
    stored: dict[str, Any],
    result: BenchmarkResult,
    baseline: tuple[Section, dict[str, Any]] | None = None,
    baseline_run: Run | None = None,
) -> Run | None:
    """Record a job's result section as its run (and a baseline section beside it, or pair it
    with `baseline_run`, the run its file's baseline section was stored as)."""
    job = (
        Job.objects.select_related("config__target", "config__draft", "hardware")
        .filter(id=job_id)
        .first()
    )
    if job is None or not job.is_active:
        logger.info("ignoring a result for job %s: unknown or already finished", job_id)
        return None
    if problem := _section_refusal(job, section, baseline=baseline):
        record_failure(job_id=job_id, error=problem)
        return None
    with transaction.atomic():
        if not _finish(job):
            return None
        release = result.engine.release or job.engine_release
        if baseline is not None:  # checked above: the config's own baseline
            baseline_run = _record_beside(job, baseline, result=result, release=release)
        run = record_run(
            job=job,
            config=job.config,
            hardware=job.hardware,
            engine_release=release,
            fields=section_fields(section, engine=result.engine)
            | {"fidelity": _graded_fidelity(section, result=result)},
            requests=section_requests(section),
            provenance=stored["provenance"],
            raw_result=stored,
        )
        _update_hardware_from(job.hardware, result.provenance.system)
        _pair_lossless(run, baseline_run=baseline_run)
        if baseline_run is not None:
            # It ran this config's plan (runner.protocols.plans): its prompts, where its records
            # do not say them, are those of that plan.
            fill_prompt_sets([baseline_run], config=baseline_run.config, beside=job.config)
            refresh_leaderboard_entry(
                config=baseline_run.config, hardware=job.hardware, engine_release=release
            )
        refresh_leaderboard_entry(
            config=run.config, hardware=run.hardware, engine_release=run.engine_release
        )
    return run


def _section_refusal(
    job: Job, section: Section, *, baseline: tuple[Section, dict[str, Any]] | None
) -> str | None:
    """Why a job's result section (and the baseline section beside it) is not the job's."""
    if problem := _model_mismatch(job, section):
        return problem
    if section.config_key != job.config.key:
        return "the worker returned a result for another config"
    if baseline is not None and (
        job.config.baseline is None or baseline[0].config_key != job.config.baseline.key
    ):
        return "the worker's baseline section is not this config's baseline"
    return None


def _finish(job: Job) -> bool:
    """Mark an active job succeeded (guarded: of two results for it, one is recorded)."""
    return bool(
        Job.objects.filter(id=job.pk, status__in=Job.ACTIVE).update(
            status=Job.Status.SUCCEEDED,
            finished_at=timezone.now(),
            error="",
            log_tail="",
            progress=job.progress | {"phase": "done"},
        )
    )


def _record_beside(
    job: Job, baseline: tuple[Section, dict[str, Any]], *, result: BenchmarkResult, release: str
) -> Run:
    """The baseline section a speculative job measured beside itself, as a run of the config's
    baseline that names the job."""
    section, stored = baseline
    run = record_run(
        # A job measures a baseline beside itself only where its config has one.
        config=cast(Config, job.config.baseline),
        hardware=job.hardware,
        engine_release=release,
        fields=section_fields(section, engine=result.engine),
        requests=section_requests(section),
        provenance=stored["provenance"] | {"measured_with_job": job.pk},
        raw_result=stored,
    )
    _pair_lossless(run)
    return run


def _settle_outputs(run: Run, *, lossless: bool | None) -> None:
    """Store a run's lossless as compared, with its fidelity grade brought into agreement
    (`verdicts.outputs_verdict`: "identical" only where lossless is True)."""
    run.lossless = lossless
    outputs = verdicts.outputs_verdict([run])
    run.lossless, run.fidelity = outputs.lossless, outputs.fidelity
    Run.objects.filter(pk=run.pk).update(lossless=run.lossless, fidelity=run.fidelity)


def _pair_lossless(run: Run, *, baseline_run: Run | None = None) -> None:
    """Compare greedy outputs with the paired baseline run, in whichever order they arrive
    (baseline_run: the one measured in the same invocation, when there is one)."""
    config = run.config
    # Only a baseline measured on the same engine backend and build flags can judge the output.
    same = {
        "hardware": run.hardware,
        "engine_release": run.engine_release,
        "engine_backend": run.engine_backend,
        "build_flags_key": run.build_flags_key,
        "self_reported": False,
    }
    if config.baseline_id is not None:
        if run.lossless is None and not run.synthetic:
            if baseline_run is None:
                baseline_run = Run.objects.filter(config=config.baseline, **same).last()
            _settle_outputs(run, lossless=_same_output(run, baseline_run) if baseline_run else None)
        return
    for speculative in Run.objects.filter(
        config__baseline=config, lossless=None, synthetic=False, **same
    ):
        _settle_outputs(speculative, lossless=_same_output(speculative, run))


def _imported_model_file(info: ModelFileInfo, *, role: str) -> ModelFile:
    """The registry row of a model known only from a result's provenance (not runnable here); a
    new row keeps the file's test-weights mark, a registered one the registry's (an admin may
    have cleared it: services.board.mark_test_weights)."""
    existing = ModelFile.objects.filter(sha256=info.sha256).first()
    if existing is not None:
        return existing
    file_name = Path(info.path).name
    name = Path(file_name).stem
    if ModelFile.objects.filter(name=name).exists():
        name = f"{name}-{info.sha256[:8]}"
    return ModelFile.objects.create(
        name=name,
        path=f"imported/{info.sha256[:12]}/{file_name}",
        sha256=info.sha256,
        size_bytes=info.size_bytes,
        architecture=info.architecture,
        metadata=info.model_dump(mode="json", exclude_unset=True),
        role=role,
        test_weights=bool(info.test_weights),
    )


def _typed(result: BenchmarkResult | dict[str, Any]) -> BenchmarkResult:
    if isinstance(result, BenchmarkResult):
        return result
    try:
        return load_result(result)
    except ResultError as error:
        raise ServiceError({"result": [str(error)]}) from None


def _import_job(
    *, owner: User, hardware: Hardware, section: Section, result: BenchmarkResult
) -> Job:
    """The running job an imported section is recorded through, with its models and config row
    (a model first known from the file keeps its test-weights mark)."""
    models = section.provenance.models
    target = _imported_model_file(models.target, role=ModelFile.Role.TARGET)
    draft = _imported_model_file(models.draft, role=ModelFile.Role.DRAFT) if models.draft else None
    return Job.objects.create(
        owner=owner,
        config=config_row(section.config, target=target, draft=draft),
        hardware=hardware,
        engine_release=result.engine.release or "unknown",
        status=Job.Status.RUNNING,
        started_at=timezone.now(),
        # Counted in the uploader's tokens today, as every job of theirs is.
        total_tokens=job_token_budget(section.config)["total_tokens"],
    )


def import_runner_result(
    *,
    owner: User,
    hardware: Hardware,
    result: BenchmarkResult | dict[str, Any],
    source: str,
) -> list[Run]:
    """Record a runner result file (and its paired baseline) as runs on a hardware kind.

    For results measured by the project's own runner outside the queue; `source` says how,
    and is kept in each run's provenance. Importing the same file twice adds nothing; a file
    the door refuses (``runner.door``) adds nothing either, nor does one a section of which
    cannot be recorded.
    """
    typed = _typed(result)
    if refusal := door_refusal(typed, hardware=hardware):
        raise ServiceError({"result": [refusal]})
    sections = _sections(typed)
    fingerprints = [digest(stored) for _, stored in sections]
    existing = {
        run.import_fingerprint: run
        for run in Run.objects.filter(import_fingerprint__in=fingerprints)
    }
    runs = []
    # The file's baseline section, stored first: its speculative section's outputs are compared
    # with that run, the baseline measured in the same invocation.
    own_baseline: Run | None = None
    # The speculative section's job, made before its baseline section is stored: that run names
    # it (``measured_with_job``), as a host's baseline measured beside its job does, so the
    # site's other batches of the baseline judge it (services.pairing).
    beside: Job | None = None
    with transaction.atomic():
        for (section, stored), fingerprint in zip(sections, fingerprints, strict=True):
            if fingerprint in existing:
                run = existing[fingerprint]
            else:
                run, beside = _import_section(
                    section,
                    stored,
                    result=typed,
                    owner=owner,
                    hardware=hardware,
                    source=source,
                    fingerprint=fingerprint,
                    file_is_new=fingerprints[-1] not in existing,
                    beside=beside,
                    own_baseline=own_baseline,
                )
            runs.append(run)
            own_baseline = run if section is typed.baseline else own_baseline
    return runs


def _import_section(
    section: Section,
    stored: dict[str, Any],
    *,
    result: BenchmarkResult,
    owner: User,
    hardware: Hardware,
    source: str,
    fingerprint: str,
    file_is_new: bool,
    beside: Job | None,
    own_baseline: Run | None,
) -> tuple[Run, Job | None]:
    """One section of a runner file not imported before, recorded as a run of its own job (the
    speculative section's, made with its baseline section); returns the run and that job."""
    provenance = stored["provenance"] | {"source": source}
    if section is result.baseline and file_is_new:
        beside = _import_job(owner=owner, hardware=hardware, section=result, result=result)
        provenance |= {"measured_with_job": beside.pk}
    job = beside if section is result and beside is not None else None
    job = job or _import_job(owner=owner, hardware=hardware, section=section, result=result)
    run = _record_job_run(
        job_id=job.pk,
        section=section,
        stored=stored | {"provenance": provenance},
        result=result,
        baseline_run=own_baseline if section is result else None,
    )
    if run is None:
        job.refresh_from_db()
        raise ServiceError({"result": [job.error or "the result could not be recorded"]})
    Run.objects.filter(pk=run.pk).update(import_fingerprint=fingerprint)
    return run, beside


def _self_reported_fields(section: Section, *, result: BenchmarkResult) -> dict[str, Any]:
    """An uploaded section's Run columns, with lossless unknown and the speedup derived."""
    fields = section_fields(section, engine=result.engine) | {"lossless": None, "speedup": None}
    # Degenerate output is judged by the runner's own rule on the file's records, not its claim.
    measured = [r.model_dump() for r in section.requests if r.phase == "measure"]
    fields["degenerate"] = is_degenerate(measured)
    if section is result:
        fields["speedup"] = derived_speedup(
            result.model_dump(include={"config", "requests", "baseline"})
        )
    return fields


def _record_uploaded_section(
    section: Section,
    stored: dict[str, Any],
    *,
    result: BenchmarkResult,
    hardware: Hardware,
    baseline_row: Config | None,
    reporter: str | None,
    uploaded_by: str | None,
) -> Run:
    """One section of an uploaded file as a self-reported run of its config's row (a
    speculative one paired with `baseline_row`, the file's baseline section's)."""
    fingerprint = digest([hardware.slug, stored])
    if Run.objects.filter(import_fingerprint=fingerprint).exists():
        raise DuplicateUploadError({"file": ["this result was already uploaded for this hardware"]})
    config = section.config
    row = uploaded_config(
        config, baseline=baseline_row if config.is_speculative else None, uploaded_by=reporter
    )
    provenance = stored["provenance"] | {
        "source": SELF_REPORTED_UPLOAD_SOURCE,
        "uploaded_by": uploaded_by,
    }
    return record_run(
        config=row,
        hardware=hardware,
        engine_release=result.engine.release or SELF_REPORTED_RELEASE,
        fields=_self_reported_fields(section, result=result),
        requests=section_requests(section),
        provenance=provenance,
        raw_result=stored,
        self_reported=True,
        fingerprint=fingerprint,
    )


def record_self_reported_result(
    *,
    result: BenchmarkResult | dict[str, Any],
    hardware_name: str,
    uploaded_by: User | None = None,
    publish_name: bool = False,
) -> list[Run]:
    """Store an uploaded runner result file as self-reported runs, baseline first.

    The uploader's user name is shown in the runs' provenance, and keys their config rows, only
    when they chose to publish it; otherwise their pseudonym keys the rows (`reporter_identity`).

    Derive, don't trust: the result model refused figures that disagree with the file's own
    requests, and pairing claims are not copied. Lossless is None: the site compared no outputs
    it measured (an upload's output hashes are claims too). The speedup is recomputed from the
    file's baseline section, stored and shown as the baseline run (`derived_speedup`), or None.
    """
    if not hardware_name.strip():
        raise ServiceError({"hardware": ["name the hardware these results were measured on"]})
    typed = _typed(result)
    username = getattr(uploaded_by, "username", None)
    with transaction.atomic():
        reporter = reporter_identity(user=uploaded_by, publish_name=publish_name)
        hardware = register_hardware(gpu_name=hardware_name.strip()[:200], self_reported=True)
        if refusal := door_refusal(typed, hardware=hardware):
            # Raised inside the transaction: the hardware kind registered for it goes too.
            raise ServiceError({"result": [refusal]})
        _fix_cpu_model(hardware, typed.provenance.system)
        runs: list[Run] = []
        baseline_row: Config | None = None
        for section, stored in _sections(typed):
            run = _record_uploaded_section(
                section,
                stored,
                result=typed,
                hardware=hardware,
                baseline_row=baseline_row,
                reporter=reporter,
                uploaded_by=username if publish_name else None,
            )
            if not section.config.is_speculative:
                baseline_row = run.config
            runs.append(run)
        for run in runs:
            refresh_leaderboard_entry(
                config=run.config, hardware=run.hardware, engine_release=run.engine_release
            )
    return runs
