"""Submissions: a raw config checked with the runner's schema and the model registry,
recorded as a Config row and queued as a Job. A speculative job with its own drafting measures its
paired baseline in the same run (services.jobs.measures_own_baseline); a synthetic-acceptance one
gets its shared baseline job scheduled when missing.

The HTML form and the API call the same `submit_config`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from pydantic import ValidationError

from leaderboard.models import (
    Config,
    Hardware,
    Job,
    ModelFile,
    Run,
)
from leaderboard.services.configs import config_row
from leaderboard.services.errors import SubmissionError
from leaderboard.services.jobs import enqueue_on_commit, measures_own_baseline, new_job
from leaderboard.services.limits import check_allowance
from runner.compatibility import gpu_placement_problems, memory_problems, pair_problems
from runner.config import BenchmarkConfig, field_errors


@dataclass(frozen=True)
class ValidatedConfig:
    """A submitted config that passed the runner's schema and the model registry, with the rows it
    refers to: what a job is made of."""

    config: BenchmarkConfig
    hardware: Hardware
    target: ModelFile
    draft: ModelFile | None


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


def validate_submission(*, data: Any, hardware_slug: str | None = None) -> ValidatedConfig:
    """Check raw config data with the runner's schema and the model registry; raise SubmissionError."""
    errors: dict[str, list[str]] = {}
    hardware = _choose_hardware(hardware_slug, errors)
    if not isinstance(data, dict):
        errors["non_field_errors"] = ["the config must be a JSON object"]
        raise SubmissionError(errors)
    config = _schema_config(data, errors)
    registered = _registered_references(data, errors)
    reference = data.get("target_model")
    target = registered.get(reference) if isinstance(reference, str) else None
    # Without a hardware kind `_choose_hardware` filled `errors`.
    if errors or config is None or target is None or hardware is None:
        raise SubmissionError(errors)
    draft = registered.get(config.draft_model) if config.draft_model else None
    if problems := _fit_problems(config, target=target, draft=draft, hardware=hardware):
        raise SubmissionError(problems)
    return ValidatedConfig(config=config, hardware=hardware, target=target, draft=draft)


def _schema_config(data: dict, errors: dict[str, list[str]]) -> BenchmarkConfig | None:
    """The config as the runner's schema reads it, or None with its field errors in `errors`."""
    try:
        return BenchmarkConfig.model_validate(data)
    except ValidationError as error:
        for name, messages in field_errors(error).items():
            errors.setdefault(name, []).extend(messages)
    return None


def _registered_references(data: dict, errors: dict[str, list[str]]) -> dict[str, ModelFile]:
    """The registered files the config's target and draft name, by reference; each one that is
    not registered (or a draft named as the target) is added to `errors`."""
    references: dict[str, str] = {
        name: data[name]
        for name in ("target_model", "draft_model")
        if isinstance(data.get(name), str) and name not in errors
    }
    registered = {
        model.path: model for model in ModelFile.objects.filter(path__in=set(references.values()))
    }
    for name, reference in references.items():
        if reference not in registered:
            errors[name] = [
                f"{reference!r} is not a registered model; choose one of the registered files"
            ]
    target = registered.get(references.get("target_model", ""))
    if target is not None and target.role != ModelFile.Role.TARGET:
        errors["target_model"] = [f"{target.name} is registered as a draft, not a target model"]
    return registered


def _fit_problems(
    config: BenchmarkConfig,
    *,
    target: ModelFile,
    draft: ModelFile | None,
    hardware: Hardware | None,
) -> dict[str, list[str]] | None:
    """Why the runner's checks refuse the models as a pair, or the config on the hardware: a
    GPU its split names must be one the kind has, and each GPU's share of the weights and K/V
    cache must fit its own memory (`runner.compatibility`, on the metadata read at
    registration: no file access)."""
    target_info, draft_info = target.model_info(), draft.model_info() if draft else None
    if problems := pair_problems(config, target_info, draft_info):
        return problems
    if hardware is None:
        return None
    return gpu_placement_problems(config, gpu_count=hardware.gpu_count) or memory_problems(
        config,
        target_info,
        draft_info,
        memory_bytes=hardware.memory_bytes,
        gpu_memory=hardware.gpu_memory(),
    )


def _has_pairable_baseline(*, baseline: Config, hardware: Hardware, engine_release: str) -> bool:
    """Whether this hardware's workers measured the baseline on the engine they measure with.

    A baseline pairs only with runs of the same engine backend and build flags, so neither an
    imported result nor one from an engine the workers no longer use will do. The workers'
    engine is the one of their latest run on this hardware and release.
    """
    by_workers = Run.objects.filter(
        # A job's own run, or a baseline a speculative job measured beside itself.
        Q(job__isnull=False) | Q(provenance__has_key="measured_with_job"),
        hardware=hardware,
        engine_release=engine_release,
        self_reported=False,
        import_fingerprint__isnull=True,
    )
    latest = (
        by_workers.order_by("-created_at", "-id")
        .values("engine_backend", "build_flags_key")
        .first()
    )
    if latest is None:
        return by_workers.filter(config=baseline).exists()
    return by_workers.filter(config=baseline, **latest).exists()


def _schedule_baseline(job: Job) -> Job | None:
    """Queue the paired baseline of a job that does not measure it itself, unless it has a
    pairable result or a job in flight on this hardware and release."""
    # Two submissions that share a baseline take turns here: the row lock makes the second wait
    # for the first's commit, so it sees the baseline job the first queued (PostgreSQL).
    # Only a job whose config has a baseline schedules one.
    baseline = Config.objects.select_for_update().get(pk=cast(int, job.config.baseline_id))
    same = {"config": baseline, "hardware": job.hardware, "engine_release": job.engine_release}
    if _has_pairable_baseline(
        baseline=baseline, hardware=job.hardware, engine_release=job.engine_release
    ):
        return None
    if Job.objects.filter(**same, status__in=Job.ACTIVE).exists():
        return None
    baseline_job = new_job(owner=job.owner, auto_scheduled=True, baseline_for=job, **same)
    enqueue_on_commit(baseline_job)
    return baseline_job


def submit_config(*, owner: User, data: Any, hardware_slug: str | None = None) -> Job:
    """Validate a config, record it and queue its job (and a synthetic config's paired baseline's,
    when missing)."""
    return queue_submission(
        owner=owner, submission=validate_submission(data=data, hardware_slug=hardware_slug)
    )


def queue_submission(*, owner: User, submission: ValidatedConfig) -> Job:
    """Record an already validated config and queue its job.

    A speculative config with its own drafting is sent with_baseline: its job measures the paired
    baseline itself, so no separate baseline job is queued (it would cost a whole baseline run of
    GPU time). A synthetic-acceptance config shares one baseline job per (baseline config,
    hardware, release), queued here when there is neither a pairable result nor one in flight.

    The submit form validates once, in its clean(), and hands its ValidatedConfig here. Raises
    LimitReached when the user's allowance (services.limits) does not cover it.
    """
    with transaction.atomic():
        # One user's submissions take turns (a row lock), so two web processes cannot both
        # take the last slot of the allowance. Only the lock is wanted, not the row.
        get_user_model().objects.select_for_update().filter(pk=owner.pk).exists()
        tokens = check_allowance(user=owner, config=submission.config)
        config = config_row(submission.config, target=submission.target, draft=submission.draft)
        job = new_job(
            owner=owner,
            config=config,
            hardware=submission.hardware,
            engine_release=settings.SPECBOARD_ENGINE_RELEASE,
            total_tokens=tokens,
        )
        enqueue_on_commit(job)
        if config.baseline is not None and not measures_own_baseline(config):
            _schedule_baseline(job)
    return job
