"""The registry: hardware kinds, model files and engine builds.

A model is registered by reading its GGUF header with the runner; a hardware kind gets the queue
its GPU workers consume; retiring an engine build takes its rows off the ranking."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.text import slugify
from pydantic import ValidationError

from leaderboard.celery import gpu_queue
from leaderboard.models import (
    EngineBuild,
    Hardware,
    LeaderboardEntry,
    ModelFile,
)
from leaderboard.services.board import raise_board_version
from leaderboard.services.errors import RegistrationError
from runner.config import BenchmarkConfig, field_errors
from runner.errors import ModelCheckError
from runner.gguf.inspect import ModelInfo, inspect_model
from runner.provenance import normalise_gpu_name

DRAFT_ARCHITECTURES = frozenset({"dflash", "dflash-draft", "eagle3"})


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


def model_info(model: ModelFile) -> ModelInfo:
    """The runner's ModelInfo of a registered file, from the metadata read at registration."""
    known = ModelInfo.__dataclass_fields__
    return ModelInfo(**{k: v for k, v in model.metadata.items() if k in known})
