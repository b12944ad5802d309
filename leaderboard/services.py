"""Every write Specboard makes: typed functions with keyword-only arguments.

Views, forms, serializers, admin actions, commands and Celery tasks call these and nothing else.
Job status changes are guarded conditional UPDATEs, so two workers can never both move a job.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.text import slugify
from pydantic import ValidationError

from leaderboard import selectors
from leaderboard.celery import gpu_queue
from leaderboard.models import (
    BoardVersion,
    Config,
    EngineBuild,
    Hardware,
    Job,
    LeaderboardEntry,
    ModelFile,
    RequestRecord,
    Run,
)
from runner.config import BenchmarkConfig, field_errors
from runner.errors import ModelCheckError
from runner.gguf_inspect import ModelInfo, check_speculative_pair, inspect_model, max_dflash_n_max
from runner.stats import ratio, summarize

logger = logging.getLogger(__name__)

DRAFT_ARCHITECTURES = frozenset({"dflash", "dflash-draft", "eagle3"})
PROGRESS_KEYS = ("phase", "done", "total", "tokens", "elapsed_s")
LIVE_LOG_CHARS = 4000
SELF_REPORTED_RELEASE = "unreported"
SEED_CSV_COLUMNS = (
    "run_name", "api", "model", "runs", "avg_tps", "median_tps", "min_tps", "max_tps",
    "total_tokens", "total_elapsed_s", "samples", "sample_tokens", "sample_elapsed_s",
    "prompt_preview", "draft_tokens", "draft_accepted",
)  # fmt: skip
# A run name with one of these markers is a speculative config, not the uploader's baseline.
_SPECULATIVE_MARKER = re.compile(r"draft|dflash|mtp|eagle|ngram|spec|lookup", re.IGNORECASE)


class ServiceError(Exception):
    """A request the service refuses; `errors` maps field names to messages for forms and the API."""

    def __init__(self, errors: dict[str, list[str]] | str) -> None:
        self.errors = {"non_field_errors": [errors]} if isinstance(errors, str) else errors
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in self.errors.items()))


class SubmissionError(ServiceError):
    """The submitted config is invalid; nothing was created."""


class RegistrationError(ServiceError):
    """A model file cannot be registered."""


class CsvImportError(ServiceError):
    """An uploaded results file cannot be imported; nothing was created."""


@dataclass(frozen=True)
class Submission:
    """A validated submission: the runner's config and the rows it refers to."""

    config: BenchmarkConfig
    hardware: Hardware
    target: ModelFile
    draft: ModelFile | None


@dataclass
class ImportReport:
    """What an import of a results file created."""

    hardware: Hardware
    baseline_run_name: str
    runs_created: int = 0
    runs_skipped: int = 0
    configs: list[Config] = field(default_factory=list)


# Registry.


def normalise_gpu_name(name: str) -> str:
    """One spelling per GPU: vendor words and trademark signs removed, spaces collapsed."""
    name = re.sub(r"\((R|TM)\)", " ", name, flags=re.IGNORECASE)
    name = re.sub(r"\b(NVIDIA|GeForce|Corporation)\b", " ", name, flags=re.IGNORECASE)
    return " ".join(name.split()) or "unknown"


def register_hardware(
    *,
    gpu_name: str,
    memory_bytes: int | None = None,
    driver: str = "",
    cuda: str = "",
    host: str = "",
    self_reported: bool = False,
    slug: str | None = None,
) -> Hardware:
    """Find or create a hardware kind; measured kinds get the queue their workers consume."""
    normalised = normalise_gpu_name(gpu_name)
    if slug is None:
        memory = f"-{round(memory_bytes / 2**30)}gb" if memory_bytes else ""
        slug = slugify(f"{normalised}{memory}")[:90] + ("-self-reported" if self_reported else "")
    hardware, created = Hardware.objects.get_or_create(
        slug=slug,
        defaults={
            "gpu_name": normalised,
            "memory_bytes": memory_bytes,
            "driver": driver,
            "cuda": cuda,
            "host": host,
            "self_reported": self_reported,
            "queue_name": "" if self_reported else gpu_queue(slug),
        },
    )
    return hardware


def _model_reference_errors(reference: str) -> list[str]:
    try:
        BenchmarkConfig.model_validate({"target_model": reference})
    except ValidationError as error:
        return field_errors(error).get("target_model", [])
    return []


def register_model(
    *,
    path: str,
    role: str | None = None,
    name: str | None = None,
    registered_by: AbstractBaseUser | None = None,
) -> ModelFile:
    """Read a GGUF file inside SPECBOARD_MODELS_DIR with the runner and register it."""
    base = Path(settings.SPECBOARD_MODELS_DIR).resolve()
    candidate = Path(path)
    full = (candidate if candidate.is_absolute() else base / candidate).resolve()
    if not full.is_relative_to(base):
        raise RegistrationError({"path": [f"{path} is outside the models directory {base}"]})
    relative = full.relative_to(base).as_posix()
    if problems := _model_reference_errors(relative):
        raise RegistrationError({"path": problems})
    try:
        info = inspect_model(full)
    except ModelCheckError as error:
        raise RegistrationError({"path": [str(error)]}) from None
    if role is None:
        role = (
            ModelFile.Role.DRAFT
            if info.architecture in DRAFT_ARCHITECTURES
            else ModelFile.Role.TARGET
        )
    if role not in ModelFile.Role.values:
        raise RegistrationError(
            {"role": [f"role must be one of {', '.join(ModelFile.Role.values)}"]}
        )
    display_name = name or full.stem
    clash = ModelFile.objects.filter(name=display_name).exclude(path=relative)
    if clash.exists():
        raise RegistrationError(
            {"name": [f"another file is already registered as {display_name!r}"]}
        )
    model, _ = ModelFile.objects.update_or_create(
        path=relative,
        defaults={
            "name": display_name,
            "sha256": info.sha256,
            "size_bytes": info.size_bytes,
            "architecture": info.architecture,
            "metadata": info.as_dict() | {"path": relative},
            "role": role,
            "registered_by": registered_by,
        },
    )
    return model


def retire_engine_build(*, release: str, note: str = "") -> int:
    """Mark an engine release as bad; its leaderboard rows leave the ranking. Returns rows retired."""
    with transaction.atomic():
        EngineBuild.objects.update_or_create(
            release=release, defaults={"retired": True, "note": note}
        )
        retired = LeaderboardEntry.objects.filter(engine_release=release).update(retired=True)
        raise_board_version(layout=True)
    return retired


def raise_board_version(*, layout: bool = False) -> None:
    """Tell cached leaderboard pages that rows changed; call after the change, in its transaction.

    `layout`: rows appeared, went or changed what keeps them off the ranking, so counts and
    filter choices change too (they are cached on this part of the counter alone).
    """
    changes = {"value": F("value") + 1} | ({"layout": F("layout") + 1} if layout else {})
    if not BoardVersion.objects.filter(pk=1).update(**changes):
        BoardVersion.objects.get_or_create(pk=1, defaults={"value": 1, "layout": 1})
    selectors.forget_board_version()


# Submissions and jobs.


def _model_info(model: ModelFile) -> ModelInfo:
    known = ModelInfo.__dataclass_fields__
    return ModelInfo(**{k: v for k, v in model.metadata.items() if k in known})


def _pair_errors(config: BenchmarkConfig, target: ModelFile, draft: ModelFile | None) -> dict:
    """The runner's compatibility checks, on the metadata read at registration (no file access)."""
    target_info = _model_info(target)
    draft_info = _model_info(draft) if draft else None
    try:
        check_speculative_pair(target=target_info, draft=draft_info, spec_types=config.spec_types)
    except ModelCheckError as error:
        return {"draft_model" if draft else "spec_types": [str(error)]}
    if "draft-dflash" in config.spec_types and draft_info and config.n_max is not None:
        limit = max_dflash_n_max(draft_info)
        if config.n_max > limit:
            return {"n_max": [f"{config.n_max} is above this DFlash draft's limit of {limit}"]}
    if target_info.context_length and config.effective_ctx_size > target_info.context_length:
        return {
            "ctx_size": [
                f"{config.effective_ctx_size} is above the target's training context of "
                f"{target_info.context_length} tokens"
            ]
        }
    return {}


def _choose_hardware(hardware_slug: str | None, errors: dict[str, list[str]]) -> Hardware | None:
    servable = Hardware.objects.exclude(queue_name="")
    if hardware_slug:
        hardware = servable.filter(slug=hardware_slug).first()
        if hardware is None:
            known = ", ".join(servable.values_list("slug", flat=True)) or "none yet"
            errors["hardware"] = [f"unknown hardware {hardware_slug!r}; served: {known}"]
        return hardware
    choices = list(servable[:2])
    if len(choices) == 1:
        return choices[0]
    errors["hardware"] = [
        "choose the hardware to run on" if choices else "no hardware is served yet"
    ]
    return None


def validate_submission(*, data: Any, hardware_slug: str | None = None) -> Submission:
    """Check raw config data with the runner's schema and the model registry; raise SubmissionError."""
    errors: dict[str, list[str]] = {}
    hardware = _choose_hardware(hardware_slug, errors)
    if not isinstance(data, dict):
        errors["non_field_errors"] = ["the config must be a JSON object"]
        raise SubmissionError(errors)
    config = None
    try:
        config = BenchmarkConfig.model_validate(data)
    except ValidationError as error:
        for name, messages in field_errors(error).items():
            errors.setdefault(name, []).extend(messages)
    references = {
        name: data.get(name)
        for name in ("target_model", "draft_model")
        if isinstance(data.get(name), str) and name not in errors
    }
    registered = {m.path: m for m in ModelFile.objects.filter(path__in=references.values())}
    for name, reference in references.items():
        if reference not in registered:
            errors[name] = [
                f"{reference!r} is not a registered model; choose one of the registered files"
            ]
    target = registered.get(references.get("target_model"))
    if target is not None and target.role != ModelFile.Role.TARGET:
        errors["target_model"] = [f"{target.name} is registered as a draft, not a target model"]
    if errors or config is None:
        raise SubmissionError(errors)
    draft = registered.get(config.draft_model) if config.draft_model else None
    if pair_errors := _pair_errors(config, target, draft):
        raise SubmissionError(pair_errors)
    return Submission(config=config, hardware=hardware, target=target, draft=draft)


def _config_label(config: BenchmarkConfig, target: ModelFile, draft: ModelFile | None) -> str:
    parts = [target.name]
    if config.is_speculative:
        parts.append(config.spec_label)
        if draft and draft != target:
            parts.append(f"draft {draft.name}")
        elif draft:
            parts.append("self-draft")
        if config.n_max is not None:
            parts.append(f"n_max {config.n_max}")
    else:
        parts.append("baseline")
    if config.is_synthetic:
        parts.append("synthetic")
    return " · ".join(parts)


def _config_row(config: BenchmarkConfig, *, target: ModelFile, draft: ModelFile | None) -> Config:
    baseline = (
        _config_row(config.baseline(), target=target, draft=None) if config.is_speculative else None
    )
    row, _ = Config.objects.get_or_create(
        key=config.key,
        defaults={
            "canonical": config.canonical(),
            "label": _config_label(config, target, draft),
            "target": target,
            "draft": draft,
            "target_name": target.name,
            "spec_label": config.spec_label,
            "protocol": config.protocol.name,
            "n_max": config.n_max,
            "ctx_size": config.effective_ctx_size,
            "synthetic": config.is_synthetic,
            "baseline": baseline,
        },
    )
    return row


def job_payload(job: Job) -> dict:
    """All a GPU worker needs to run a job: plain JSON, no database access."""

    def model(row: ModelFile | None) -> dict | None:
        return {"path": row.path, "sha256": row.sha256} if row else None

    return {
        "job_id": job.pk,
        "config": job.config.canonical,
        "models": {"target": model(job.config.target), "draft": model(job.config.draft)},
    }


def _enqueue_on_commit(job: Job) -> None:
    from leaderboard.tasks import run_benchmark_job

    payload = job_payload(job)
    transaction.on_commit(
        lambda: run_benchmark_job.apply_async(
            kwargs=payload, queue=job.hardware.queue_name, task_id=str(job.task_id)
        ),
        robust=True,
    )


def _schedule_baseline(job: Job) -> Job | None:
    """Queue the paired baseline unless it has a result or a job in flight on this hardware and release."""
    # Two submissions that share a baseline take turns here: the row lock makes the second wait
    # for the first's commit, so it sees the baseline job the first queued (PostgreSQL).
    baseline = Config.objects.select_for_update().get(pk=job.config.baseline_id)
    same = {"config": baseline, "hardware": job.hardware, "engine_release": job.engine_release}
    if Run.objects.filter(**same, self_reported=False).exists():
        return None
    if Job.objects.filter(**same, status__in=Job.ACTIVE).exists():
        return None
    baseline_job = Job.objects.create(
        owner=job.owner, auto_scheduled=True, baseline_for=job, **same
    )
    _enqueue_on_commit(baseline_job)
    return baseline_job


def submit_config(*, owner: AbstractBaseUser, data: Any, hardware_slug: str | None = None) -> Job:
    """Validate a config, record it and queue its job (and its paired baseline's, when missing)."""
    submission = validate_submission(data=data, hardware_slug=hardware_slug)
    with transaction.atomic():
        config = _config_row(submission.config, target=submission.target, draft=submission.draft)
        job = Job.objects.create(
            owner=owner,
            config=config,
            hardware=submission.hardware,
            engine_release=settings.SPECBOARD_ENGINE_RELEASE,
        )
        _enqueue_on_commit(job)
        if config.baseline is not None:
            _schedule_baseline(job)
    return job


def claim_job(*, job_id: int) -> bool:
    """Move a queued job to running; False if another worker claimed it or it was cancelled."""
    return (
        Job.objects.filter(id=job_id, status=Job.Status.QUEUED).update(
            status=Job.Status.RUNNING,
            started_at=timezone.now(),
            attempts=F("attempts") + 1,
            progress={"phase": "started"},
        )
        == 1
    )


def record_progress(*, job_id: int, progress: dict) -> bool:
    """Store a worker's progress event; the first ("started") claims the job."""
    if progress.get("phase") == "started":
        if claim_job(job_id=job_id):
            return True
        # A redelivered job (its worker was lost) starts again: count the attempt.
        if Job.objects.filter(id=job_id, status=Job.Status.RUNNING).update(
            attempts=F("attempts") + 1
        ):
            attempts = Job.objects.filter(id=job_id).values_list("attempts", flat=True).first() or 0
            if attempts > settings.SPECBOARD_MAX_ATTEMPTS:
                record_failure(job_id=job_id, error=f"gave up after {attempts - 1} lost workers")
                return False
            return True
        return False
    clean = {key: progress[key] for key in PROGRESS_KEYS if key in progress}
    # The running engine's recent log, shown live on the job page (kept if a failure follows).
    live_log = progress.get("log_tail")
    log = {"log_tail": live_log[-LIVE_LOG_CHARS:]} if isinstance(live_log, str) else {}
    # Progress may arrive after the result (the db queue has several consumers): guard on status.
    return bool(
        Job.objects.filter(id=job_id, status__in=Job.ACTIVE).update(
            status=Job.Status.RUNNING,
            progress=clean,
            started_at=Coalesce(F("started_at"), Value(timezone.now())),
            **log,
        )
    )


def record_failure(*, job_id: int, error: str, log_tail: str = "") -> bool:
    """Finish a job as failed with the reason and the engine's log tail; ignored once finished."""
    return bool(
        Job.objects.filter(id=job_id, status__in=Job.ACTIVE).update(
            status=Job.Status.FAILED,
            error=error.strip()[:2000] or "failed",
            log_tail=log_tail[-8000:],
            finished_at=timezone.now(),
        )
    )


def cancel_job(*, job: Job, user: AbstractBaseUser) -> bool:
    """Cancel a queued or running job for its owner; False if it has already finished."""
    if job.owner_id != user.pk and not user.is_staff:
        raise PermissionDenied("only the job's owner can cancel it")
    cancelled = Job.objects.filter(id=job.pk, status__in=Job.ACTIVE).update(
        status=Job.Status.CANCELLED, finished_at=timezone.now()
    )
    if cancelled:
        from leaderboard.celery import app

        # Workers skip a revoked task, and a running one sees it through should_cancel.
        transaction.on_commit(lambda: app.control.revoke(str(job.task_id)), robust=True)
    return bool(cancelled)


def _model_mismatch(job: Job, result: dict) -> str | None:
    models = (result.get("provenance") or {}).get("models") or {}
    for role, row in (("target", job.config.target), ("draft", job.config.draft)):
        reported = (models.get(role) or {}).get("sha256")
        if row is not None and reported and reported != row.sha256:
            return f"the worker's {role} model {row.path} differs from the registered file (sha256)"
    return None


def _stats(prefix: str, summary: dict | None) -> dict:
    summary = summary or {}
    names = ("mean", "median", "stdev", "min", "max", "ci95_low", "ci95_high")
    return {f"{prefix}_{name}": summary.get(name) for name in names}


def _run_fields(result: dict) -> dict:
    """The Run columns that a runner result fills, with the definitions the runner used."""
    summary = result.get("summary") or {}
    engine = result.get("engine") or {}
    decode = summary.get("decode_tokens_per_second") or {}
    return {
        "engine_backend": (engine.get("backend") or "")[:32],
        "tps_definition": Run.Definition.DECODE,
        "n": decode.get("n") or 0,
        **_stats("decode", decode),
        **_stats("e2e", summary.get("end_to_end_tokens_per_second")),
        "ttft_ms_mean": (summary.get("ttft_ms") or {}).get("mean"),
        "acceptance_rate": summary.get("acceptance_rate"),
        "tau": summary.get("tau"),
        "draft_tokens": summary.get("draft_tokens") or 0,
        "draft_accepted": summary.get("draft_accepted") or 0,
        "verify_steps": summary.get("verify_steps") or 0,
        "speedup": summary.get("speedup"),
        "lossless": summary.get("lossless"),
        "synthetic": bool(result.get("synthetic")),
        "degenerate": bool(summary.get("degenerate")),
        "peak_memory_bytes": summary.get("peak_memory_bytes"),
        "memory_kind": (summary.get("memory_kind") or "")[:16],
        "gpu_seconds": summary.get("gpu_seconds") or 0.0,
    }


def _request_record(run: Run, index: int, row: dict) -> RequestRecord:
    return RequestRecord(
        run=run,
        index=row.get("index", index),
        phase=row.get("phase") or "measure",
        point=row.get("point"),
        input_tokens=row.get("input_tokens"),
        prompt_n=row.get("prompt_n") or 0,
        prompt_ms=row.get("prompt_ms"),
        predicted_n=row.get("predicted_n") or 0,
        predicted_ms=row.get("predicted_ms"),
        decode_tokens_per_second=row.get("decode_tokens_per_second"),
        end_to_end_tokens_per_second=row.get("end_to_end_tokens_per_second"),
        ttft_ms=row.get("ttft_ms"),
        wall_ms=row.get("wall_ms"),
        draft_n=row.get("draft_n") or 0,
        draft_n_accepted=row.get("draft_n_accepted") or 0,
        verify_steps=row.get("verify_steps") or 0,
        tau=row.get("tau"),
        accepted_per_position=row.get("accepted_per_position") or [],
        output_sha256=row.get("output_sha256") or "",
        first_divergence=row.get("first_divergence"),
    )


def _same_output(run: Run, baseline_run: Run) -> bool | None:
    """Whether a speculative run produced the baseline's greedy output, request by request."""
    mine = list(run.requests.values_list("output_sha256", flat=True))
    theirs = list(baseline_run.requests.values_list("output_sha256", flat=True))
    if not mine or not theirs or "" in mine or "" in theirs:
        return None
    return mine == theirs


def _update_hardware_from(hardware: Hardware, system: dict) -> None:
    changes = {
        name: str(system[key])
        for name, key in (("driver", "driver"), ("cuda", "cuda"), ("host", "hostname"))
        if system.get(key) and not getattr(hardware, name)
    }
    if not hardware.memory_bytes and system.get("gpu_memory_bytes"):
        changes["memory_bytes"] = int(system["gpu_memory_bytes"])
    if changes:
        Hardware.objects.filter(pk=hardware.pk).update(**changes)


def record_result(*, job_id: int, result: dict) -> Run | None:
    """Store a job's result as its one Run and refresh its leaderboard row; repeats are ignored."""
    job = (
        Job.objects.select_related("config__target", "config__draft", "hardware")
        .filter(id=job_id)
        .first()
    )
    if job is None or not job.is_active:
        logger.info("ignoring a result for job %s: unknown or already finished", job_id)
        return None
    if problem := _model_mismatch(job, result):
        record_failure(job_id=job_id, error=problem)
        return None
    if result.get("config_key") != job.config.key:
        record_failure(job_id=job_id, error="the worker returned a result for another config")
        return None
    engine = result.get("engine") or {}
    provenance = result.get("provenance") or {}
    with transaction.atomic():
        finished = Job.objects.filter(id=job_id, status__in=Job.ACTIVE).update(
            status=Job.Status.SUCCEEDED,
            finished_at=timezone.now(),
            error="",
            log_tail="",
            progress=job.progress | {"phase": "done"},
        )
        if not finished:
            return None
        run = Run.objects.create(
            job=job,
            config=job.config,
            hardware=job.hardware,
            engine_release=engine.get("release") or job.engine_release,
            **_run_fields(result),
            provenance=provenance,
            raw_result=result,
        )
        RequestRecord.objects.bulk_create(
            _request_record(run, i, row) for i, row in enumerate(result.get("requests") or [])
        )
        EngineBuild.objects.get_or_create(release=run.engine_release)
        _update_hardware_from(job.hardware, provenance.get("system") or {})
        _pair_lossless(run)
        refresh_leaderboard_entry(
            config=run.config, hardware=run.hardware, engine_release=run.engine_release
        )
    return run


def _pair_lossless(run: Run) -> None:
    """Compare greedy outputs with the paired baseline run, in whichever order they arrive."""
    config = run.config
    same = {"hardware": run.hardware, "engine_release": run.engine_release, "self_reported": False}
    if config.baseline_id is not None:
        if run.lossless is None and not run.synthetic:
            baseline_run = Run.objects.filter(config=config.baseline, **same).last()
            if baseline_run is not None:
                run.lossless = _same_output(run, baseline_run)
                Run.objects.filter(pk=run.pk).update(lossless=run.lossless)
        return
    for speculative in Run.objects.filter(
        config__baseline=config, lossless=None, synthetic=False, **same
    ):
        Run.objects.filter(pk=speculative.pk).update(lossless=_same_output(speculative, run))


def _best_run(runs: list[Run]) -> Run:
    """The seed's rule: the batch with the best average; degenerate batches only if nothing else."""
    candidates = [r for r in runs if not r.degenerate and r.tokens_per_second] or runs
    return max(candidates, key=lambda r: r.tokens_per_second or 0.0)


def _speedup(entry: LeaderboardEntry, baseline: LeaderboardEntry | None) -> float | None:
    if baseline is None or baseline.tps_definition != entry.tps_definition:
        return None
    return ratio(entry.tokens_per_second, baseline.tokens_per_second)


def refresh_leaderboard_entry(
    *, config: Config, hardware: Hardware, engine_release: str
) -> LeaderboardEntry | None:
    """Recompute one leaderboard row from its runs, and the speedups of rows paired with it."""
    with transaction.atomic():
        entry, layout = _refresh_entry(
            config=config, hardware=hardware, engine_release=engine_release
        )
        raise_board_version(layout=layout)
    return entry


# What decides whether a row is on the board and in the main ranking.
LAYOUT_FLAGS = ("synthetic", "self_reported", "degenerate", "retired")


def _refresh_entry(
    *, config: Config, hardware: Hardware, engine_release: str
) -> tuple[LeaderboardEntry | None, bool]:
    """The row recomputed, and whether the board's layout changed (a row came, went or moved
    between the ranking and the kept-off rows)."""
    same = {"hardware": hardware, "engine_release": engine_release}
    before = LeaderboardEntry.objects.filter(config=config, **same).values_list(*LAYOUT_FLAGS)
    layout_before = before.first()
    runs = list(Run.objects.filter(config=config, **same))
    if not runs:
        LeaderboardEntry.objects.filter(config=config, **same).delete()
        return None, layout_before is not None
    best = _best_run(runs)
    low, high = best.ci95
    # Every release on the board has its build row (staleness and retirement are read there).
    build, _ = EngineBuild.objects.get_or_create(release=engine_release)
    stdev, median = (
        (best.decode_stdev, best.decode_median)
        if best.tps_definition == Run.Definition.DECODE
        else (best.e2e_stdev, best.e2e_median)
    )
    baseline = (
        LeaderboardEntry.objects.filter(config_id=config.baseline_id, **same).first()
        if config.baseline_id
        else None
    )
    entry, _ = LeaderboardEntry.objects.update_or_create(
        config=config,
        **same,
        defaults={
            "best_run": best,
            "runs_count": len(runs),
            "tps_definition": best.tps_definition,
            "tokens_per_second": best.tokens_per_second or 0.0,
            "n": best.n,
            "stdev": stdev,
            "median": median,
            "ci95_low": low,
            "ci95_high": high,
            "end_to_end_tokens_per_second": best.e2e_mean,
            "acceptance_rate": best.acceptance_rate,
            "tau": best.tau,
            "lossless": best.lossless,
            "synthetic": best.synthetic,
            "self_reported": best.self_reported,
            "degenerate": best.degenerate,
            "peak_memory_bytes": best.peak_memory_bytes,
            "baseline_entry": baseline,
            "retired": build.retired,
            "updated_at": timezone.now(),
        },
    )
    entry.speedup = _speedup(entry, baseline)
    entry.save(update_fields=["speedup"])
    layout = layout_before != tuple(getattr(entry, flag) for flag in LAYOUT_FLAGS)
    for paired in LeaderboardEntry.objects.filter(config__baseline=config, **same).select_related(
        "config"
    ):
        layout |= _refresh_entry(config=paired.config, **same)[1]
    return entry, layout


# Community results: the seed kit's leaderboard_runs.csv.


def _inferred_spec(run_name: str) -> tuple[str, int | None]:
    """The speculative type and n_max that a seed-kit run name suggests (e.g. qwen36-dflash12)."""
    lowered = run_name.lower()
    types = [
        label
        for marker, label in (
            ("dflash", "draft-dflash"),
            ("mtp", "draft-mtp"),
            ("eagle", "draft-eagle3"),
        )
        if marker in lowered
    ]
    if "ngram" in lowered:
        types.append("ngram")
    match = re.search(r"(?:dflash|mtp|eagle3?)[-_]?(\d+)", lowered)
    return (",".join(types) or "none"), int(match.group(1)) if match else None


def _number_list(value: str, column: str, line: int) -> list[float]:
    try:
        parsed = json.loads(value) if value.strip() else []
        if not isinstance(parsed, list):
            raise ValueError(column)
        return [float(item) for item in parsed]
    except (ValueError, TypeError):
        raise CsvImportError(
            {"file": [f"line {line}: {column} is not a JSON list of numbers"]}
        ) from None


def _parse_seed_row(row: dict, line: int) -> dict:
    def number(column: str) -> float:
        try:
            value = float(row.get(column) or 0)
        except (TypeError, ValueError):
            raise CsvImportError({"file": [f"line {line}: {column} must be a number"]}) from None
        if value != value or value in (float("inf"), float("-inf")) or value < 0:
            raise CsvImportError(
                {"file": [f"line {line}: {column} must be a finite, positive number"]}
            )
        return value

    run_name = (row.get("run_name") or "").strip()
    if not run_name:
        raise CsvImportError({"file": [f"line {line}: run_name is empty"]})
    parsed: dict[str, Any] = {
        "run_name": run_name[:200],
        "model": (row.get("model") or "").strip()[:200],
        "prompt_preview": (row.get("prompt_preview") or "")[:2000],
        **{
            c: number(c) for c in ("avg_tps", "median_tps", "min_tps", "max_tps", "total_elapsed_s")
        },
        **{c: int(number(c)) for c in ("runs", "total_tokens", "draft_tokens", "draft_accepted")},
        **{
            c: _number_list(row.get(c) or "", c, line)
            for c in ("samples", "sample_tokens", "sample_elapsed_s")
        },
    }
    if parsed["avg_tps"] <= 0 or parsed["runs"] < 1:
        raise CsvImportError({"file": [f"line {line}: runs and avg_tps must be positive"]})
    if parsed["draft_accepted"] > parsed["draft_tokens"]:
        raise CsvImportError({"file": [f"line {line}: draft_accepted is larger than draft_tokens"]})
    return parsed


def _read_seed_csv(content: bytes | str) -> list[dict]:
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise CsvImportError({"file": ["the file is not UTF-8 text"]}) from None
    try:
        reader = csv.DictReader(io.StringIO(content))
        missing = [c for c in SEED_CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise CsvImportError({"file": [f"missing columns: {', '.join(missing)}"]})
        rows = [_parse_seed_row(row, index + 2) for index, row in enumerate(reader)]
    except csv.Error as error:
        raise CsvImportError({"file": [f"not a readable CSV file: {error}"]}) from None
    if not rows:
        raise CsvImportError({"file": ["the file holds no result rows"]})
    return rows


def _choose_baseline_name(names: list[str], chosen: str | None) -> str:
    if chosen:
        if chosen not in names:
            raise CsvImportError(
                {"baseline_run_name": [f"{chosen!r} is not a run_name in the file"]}
            )
        return chosen
    candidates = [name for name in names if not _SPECULATIVE_MARKER.search(name)]
    if len(candidates) != 1:
        found = ", ".join(candidates) or "none"
        raise CsvImportError(
            {"baseline_run_name": [f"name the baseline run (plain decoding); candidates: {found}"]}
        )
    return candidates[0]


def _imported_config(
    *, run_name: str, target_name: str, baseline: Config | None, prompt: str
) -> Config:
    """A self-reported config: identified by its run name, target and the baseline it is paired with."""
    spec_label, n_max = ("none", None) if baseline is None else _inferred_spec(run_name)
    identity = {
        "source": "seed-leaderboard-csv",
        "run_name": run_name,
        "target_name": target_name,
        "baseline_run_name": baseline.label if baseline else None,
    }
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    config, _ = Config.objects.get_or_create(
        key=key,
        defaults={
            "canonical": identity
            | {
                "spec_label_inferred": spec_label,
                "n_max_inferred": n_max,
                "prompt_preview": prompt[:200],
            },
            "label": run_name,
            "target_name": target_name,
            "spec_label": spec_label,
            "protocol": "quick",
            "n_max": n_max,
            "self_reported": True,
            "baseline": baseline,
        },
    )
    return config


def import_leaderboard_csv(
    *,
    content: bytes | str,
    hardware_name: str,
    uploaded_by: AbstractBaseUser | None = None,
    baseline_run_name: str | None = None,
    target_name: str | None = None,
) -> ImportReport:
    """Import the seed kit's leaderboard_runs.csv as self-reported, end-to-end tok/s results."""
    if not hardware_name.strip():
        raise CsvImportError({"hardware": ["name the hardware these results were measured on"]})
    if len(content) > settings.SPECBOARD_MAX_IMPORT_BYTES:
        raise CsvImportError(
            {"file": [f"the file is larger than {settings.SPECBOARD_MAX_IMPORT_BYTES} bytes"]}
        )
    rows = _read_seed_csv(content)
    names = list(dict.fromkeys(row["run_name"] for row in rows))
    baseline_name = _choose_baseline_name(names, baseline_run_name)
    with transaction.atomic():
        hardware = register_hardware(gpu_name=hardware_name.strip()[:200], self_reported=True)
        report = ImportReport(hardware=hardware, baseline_run_name=baseline_name)
        target = (target_name or baseline_name).strip()[:200]
        prompt = rows[0]["prompt_preview"]
        baseline = _imported_config(
            run_name=baseline_name, target_name=target, baseline=None, prompt=prompt
        )
        configs = {baseline_name: baseline}
        for name in names:
            if name != baseline_name:
                configs[name] = _imported_config(
                    run_name=name, target_name=target, baseline=baseline, prompt=prompt
                )
        for row in rows:
            fingerprint = hashlib.sha256(
                json.dumps([hardware.slug, target, baseline_name, row], sort_keys=True).encode()
            ).hexdigest()
            if Run.objects.filter(import_fingerprint=fingerprint).exists():
                report.runs_skipped += 1
                continue
            _create_imported_run(
                row,
                config=configs[row["run_name"]],
                hardware=hardware,
                fingerprint=fingerprint,
                uploaded_by=uploaded_by,
            )
            report.runs_created += 1
        # The baseline first, so every paired row finds it when its speedup is computed.
        for config in configs.values():
            refresh_leaderboard_entry(
                config=config, hardware=hardware, engine_release=SELF_REPORTED_RELEASE
            )
        report.configs = list(configs.values())
    return report


def _create_imported_run(
    row: dict,
    *,
    config: Config,
    hardware: Hardware,
    fingerprint: str,
    uploaded_by: AbstractBaseUser | None,
) -> Run:
    samples = summarize(row["samples"]) if row["samples"] else {}
    run = Run.objects.create(
        config=config,
        hardware=hardware,
        engine_release=SELF_REPORTED_RELEASE,
        tps_definition=Run.Definition.END_TO_END,
        n=samples.get("n") or row["runs"],
        e2e_mean=row["avg_tps"],
        e2e_median=row["median_tps"],
        e2e_min=row["min_tps"],
        e2e_max=row["max_tps"],
        e2e_stdev=samples.get("stdev"),
        e2e_ci95_low=samples.get("ci95_low"),
        e2e_ci95_high=samples.get("ci95_high"),
        acceptance_rate=row["draft_accepted"] / row["draft_tokens"]
        if row["draft_tokens"]
        else None,
        draft_tokens=row["draft_tokens"],
        draft_accepted=row["draft_accepted"],
        self_reported=True,
        run_name=row["run_name"],
        import_fingerprint=fingerprint,
        provenance={
            "source": "seed-leaderboard-csv",
            "uploaded_by": getattr(uploaded_by, "username", None),
            "model": row["model"],
            "prompt_preview": row["prompt_preview"],
            "tokens_per_second_definition": "completion tokens / client wall time (end-to-end)",
        },
        raw_result=row,
    )
    tokens, elapsed = row["sample_tokens"], row["sample_elapsed_s"]
    RequestRecord.objects.bulk_create(
        RequestRecord(
            run=run,
            index=i,
            predicted_n=int(tokens[i]) if i < len(tokens) else 0,
            wall_ms=float(elapsed[i]) * 1000 if i < len(elapsed) else None,
            end_to_end_tokens_per_second=value,
        )
        for i, value in enumerate(row["samples"])
    )
    return run


# Runner results measured outside the queue (the GPU pipeline in bench/gpu/).


def _imported_model_file(info: dict, *, role: str) -> ModelFile:
    """The registry row of a model known only from a result's provenance (not runnable here)."""
    existing = ModelFile.objects.filter(sha256=info["sha256"]).first()
    if existing is not None:
        return existing
    file_name = Path(info["path"]).name
    name = Path(file_name).stem
    if ModelFile.objects.filter(name=name).exists():
        name = f"{name}-{info['sha256'][:8]}"
    return ModelFile.objects.create(
        name=name,
        path=f"imported/{info['sha256'][:12]}/{file_name}",
        sha256=info["sha256"],
        size_bytes=info.get("size_bytes") or 0,
        architecture=info.get("architecture") or "",
        metadata=info,
        role=role,
    )


def _result_sections(result: dict) -> list[dict]:
    """A result and its paired baseline as two complete results, baseline first."""
    shared = {"schema_version": result.get("schema_version"), "engine": result.get("engine")}
    system = (result.get("provenance") or {}).get("system")
    sections = []
    if result.get("baseline"):
        baseline = dict(result["baseline"]) | shared
        baseline["provenance"] = dict(baseline.get("provenance") or {}) | {"system": system}
        sections.append(baseline)
    sections.append({k: v for k, v in result.items() if k != "baseline"})
    return sections


def import_runner_result(
    *, owner: AbstractBaseUser, hardware: Hardware, result: dict, source: str
) -> list[Run]:
    """Record a runner result file (and its paired baseline) as runs on a hardware kind.

    For results measured by the project's own runner outside the queue; `source` says how,
    and is kept in each run's provenance. Importing the same file twice adds nothing.
    """
    if result.get("schema_version") != 1 or not isinstance(result.get("summary"), dict):
        raise ServiceError({"result": ["not a runner result (schema_version 1 expected)"]})
    runs = []
    for section in _result_sections(result):
        fingerprint = hashlib.sha256(
            json.dumps(section, sort_keys=True, default=str).encode()
        ).hexdigest()
        existing = Run.objects.filter(import_fingerprint=fingerprint).first()
        if existing is not None:
            runs.append(existing)
            continue
        try:
            config = BenchmarkConfig.model_validate(section["config"])
        except (ValidationError, KeyError, TypeError) as error:
            raise ServiceError({"config": [f"the result's config is invalid: {error}"]}) from None
        models = (section.get("provenance") or {}).get("models") or {}
        if not models.get("target"):
            raise ServiceError({"provenance": ["the result names no target model"]})
        target = _imported_model_file(models["target"], role=ModelFile.Role.TARGET)
        draft = (
            _imported_model_file(models["draft"], role=ModelFile.Role.DRAFT)
            if models.get("draft")
            else None
        )
        section = dict(section)
        section["provenance"] = dict(section.get("provenance") or {}) | {"source": source}
        with transaction.atomic():
            row = _config_row(config, target=target, draft=draft)
            job = Job.objects.create(
                owner=owner,
                config=row,
                hardware=hardware,
                engine_release=(section.get("engine") or {}).get("release") or "unknown",
                status=Job.Status.RUNNING,
                started_at=timezone.now(),
            )
            run = record_result(job_id=job.pk, result=section)
            if run is None:
                job.refresh_from_db()
                raise ServiceError({"result": [job.error or "the result could not be recorded"]})
            Run.objects.filter(pk=run.pk).update(import_fingerprint=fingerprint)
        runs.append(run)
    return runs


# Keeping the broker honest: the database is the source of truth for what must run.


def _send_job(job: Job) -> None:
    """Send a job's message (again) under its own task id; the guarded claim makes repeats safe."""
    from leaderboard.tasks import run_benchmark_job

    run_benchmark_job.apply_async(
        kwargs=job_payload(job), queue=job.hardware.queue_name, task_id=str(job.task_id)
    )


def requeue_lost_jobs(*, held_task_ids: set[str], older_than_s: float) -> list[int]:
    """Re-send queued jobs that the broker no longer holds (lost in a restart, or never sent)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    waiting = Job.objects.filter(status=Job.Status.QUEUED, created_at__lt=cutoff)
    lost_ids = [
        job_id
        for job_id, task_id in waiting.values_list("id", "task_id")
        if str(task_id) not in held_task_ids
    ]
    lost = Job.objects.filter(id__in=lost_ids, status=Job.Status.QUEUED).select_related(
        "config__target", "config__draft", "hardware"
    )
    for job in lost:
        logger.warning("job %s is queued but the broker lost it: sending it again", job.pk)
        _send_job(job)
    return [job.pk for job in lost]


def requeue_orphaned_jobs(
    *,
    executing_task_ids: set[str],
    waiting_task_ids: set[str],
    finishing_job_ids: set[int],
    older_than_s: float,
) -> list[str]:
    """Put running jobs whose worker died back in the queue, or fail them after too many tries.

    A running job is orphaned when no live worker executes it, its message waits nowhere and no
    result or failure for it is on its way. Returns the task ids it dealt with, whose old
    (unacked) messages the broker should now forget.
    """
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    running = Job.objects.filter(status=Job.Status.RUNNING, started_at__lt=cutoff)
    orphan_ids = [
        job_id
        for job_id, task_id in running.values_list("id", "task_id")
        if str(task_id) not in executing_task_ids | waiting_task_ids
        and job_id not in finishing_job_ids
    ]
    orphans = Job.objects.filter(id__in=orphan_ids).select_related(
        "config__target", "config__draft", "hardware"
    )
    handled = []
    for job in orphans:
        if job.attempts >= settings.SPECBOARD_MAX_ATTEMPTS:
            if record_failure(
                job_id=job.pk,
                error=f"worker lost: gave up after {job.attempts} attempts whose worker died",
            ):
                handled.append(str(job.task_id))
        elif Job.objects.filter(id=job.pk, status=Job.Status.RUNNING).update(
            status=Job.Status.QUEUED, progress={"phase": "requeued"}
        ):
            logger.warning("job %s lost its worker mid-run: queueing it again", job.pk)
            _send_job(job)
            handled.append(str(job.task_id))
    return handled


def fail_stuck_jobs(*, max_seconds: int) -> list[int]:
    """Fail jobs still running past the time limit, and stop their benchmark if it still runs."""
    from leaderboard.celery import app

    cutoff = timezone.now() - timedelta(seconds=max_seconds)
    stuck = list(
        Job.objects.filter(status=Job.Status.RUNNING, started_at__lt=cutoff).values_list(
            "id", "task_id"
        )
    )
    failed = []
    for job_id, task_id in stuck:
        if record_failure(
            job_id=job_id,
            error=f"timed out: still running {max_seconds} s after it started "
            "(its worker stopped or hung); stopped by the sweeper",
        ):
            app.control.revoke(str(task_id))
            failed.append(job_id)
    return failed


# Self-reported runner results, uploaded through the API: kept apart from measured results.

SELF_REPORTED_UPLOAD_SOURCE = "self-reported-upload"


class DuplicateUploadError(ServiceError):
    """The same result file was already uploaded for this hardware; nothing was created."""


def _uploaded_config(
    config: BenchmarkConfig, *, baseline: Config | None, uploaded_by: str | None
) -> Config:
    """A self-reported config row: its own key, so it never shares a row with measured results."""
    canonical = config.canonical()
    identity = {"source": SELF_REPORTED_UPLOAD_SOURCE, "config": canonical}
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    target_name = Path(config.target_model).stem
    parts = [target_name, config.spec_label if config.is_speculative else "baseline"]
    if config.draft_model:
        parts.append(f"draft {Path(config.draft_model).stem}")
    if config.n_max is not None:
        parts.append(f"n_max {config.n_max}")
    parts.append("self-reported")
    row, _ = Config.objects.get_or_create(
        key=key,
        defaults={
            "canonical": canonical | {"source": SELF_REPORTED_UPLOAD_SOURCE},
            "label": " · ".join(parts)[:200],
            "target_name": target_name[:200],
            "spec_label": config.spec_label,
            "protocol": config.protocol.name,
            "n_max": config.n_max,
            "ctx_size": config.effective_ctx_size,
            "synthetic": config.is_synthetic,
            "self_reported": True,
            "baseline": baseline,
        },
    )
    return row


def _create_uploaded_run(
    section: dict, *, config: Config, hardware: Hardware, fingerprint: str, uploaded_by: str | None
) -> Run:
    engine = section.get("engine") or {}
    provenance = dict(section.get("provenance") or {})
    provenance |= {"source": SELF_REPORTED_UPLOAD_SOURCE, "uploaded_by": uploaded_by}
    run = Run.objects.create(
        config=config,
        hardware=hardware,
        engine_release=(engine.get("release") or SELF_REPORTED_RELEASE)[:64],
        **_run_fields(section),
        self_reported=True,
        import_fingerprint=fingerprint,
        provenance=provenance,
        raw_result=section,
    )
    RequestRecord.objects.bulk_create(
        _request_record(run, i, row) for i, row in enumerate(section.get("requests") or [])
    )
    return run


def record_self_reported_result(
    *, result: dict, hardware_name: str, uploaded_by: AbstractBaseUser | None = None
) -> list[Run]:
    """Store a runner result file (already shape-checked) as self-reported runs, baseline first."""
    if not hardware_name.strip():
        raise ServiceError({"hardware": ["name the hardware these results were measured on"]})
    username = getattr(uploaded_by, "username", None)
    with transaction.atomic():
        hardware = register_hardware(gpu_name=hardware_name.strip()[:200], self_reported=True)
        runs: list[Run] = []
        baseline_row: Config | None = None
        for section in _result_sections(result):
            fingerprint = hashlib.sha256(
                json.dumps([hardware.slug, section], sort_keys=True, default=str).encode()
            ).hexdigest()
            if Run.objects.filter(import_fingerprint=fingerprint).exists():
                raise DuplicateUploadError(
                    {"file": ["this result was already uploaded for this hardware"]}
                )
            config = BenchmarkConfig.model_validate(section["config"])
            row = _uploaded_config(
                config,
                baseline=baseline_row if config.is_speculative else None,
                uploaded_by=username,
            )
            if not config.is_speculative:
                baseline_row = row
            runs.append(
                _create_uploaded_run(
                    section,
                    config=row,
                    hardware=hardware,
                    fingerprint=fingerprint,
                    uploaded_by=username,
                )
            )
        for run in runs:
            refresh_leaderboard_entry(
                config=run.config, hardware=run.hardware, engine_release=run.engine_release
            )
    return runs
