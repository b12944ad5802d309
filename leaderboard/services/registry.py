"""The registry: hardware kinds, model files and engine builds.

A model is registered by reading its GGUF header with the runner; a hardware kind gets the queue
its GPU workers consume; retiring an engine build takes its rows off the ranking."""

from __future__ import annotations

import hashlib
import re
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
from leaderboard.services.board import mark_test_weights, raise_board_version, rerank_all
from leaderboard.services.errors import RegistrationError
from runner.config import BenchmarkConfig, field_errors
from runner.errors import ModelCheckError
from runner.gguf.inspect import inspect_model
from runner.provenance import normalise_gpu_name

DRAFT_ARCHITECTURES = frozenset({"dflash", "dflash-draft", "eagle3"})


# A hardware slug is at most 100 characters: room for the name, its digest and the suffix.
_SLUG_NAME_LENGTH = 76
_SELF_REPORTED_SUFFIX = "-self-reported"
_FAITHFUL_NAME = re.compile(r"[A-Za-z0-9 -]+")


def hardware_slug(*, gpu_name: str, memory_bytes: int | None = None, self_reported: bool) -> str:
    """The slug of a hardware kind; a name that slugify would not keep whole gets its digest.

    "RTX 4090" is `rtx-4090`; names that differ only in what slugify drops (punctuation, other
    scripts, anything past its length) are different GPUs to their uploaders, so they must not
    land on one kind: `显卡` and `图形卡` would both slugify to nothing."""
    memory = f"-{round(memory_bytes / 2**30)}gb" if memory_bytes else ""
    base = slugify(f"{gpu_name}{memory}")
    faithful = _FAITHFUL_NAME.fullmatch(gpu_name) is not None and len(base) <= _SLUG_NAME_LENGTH
    if not faithful:
        name_digest = hashlib.sha256(gpu_name.encode()).hexdigest()[:8]
        base = f"{base[:_SLUG_NAME_LENGTH].strip('-')}-{name_digest}".lstrip("-")
    return base + (_SELF_REPORTED_SUFFIX if self_reported else "")


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
    if "\x00" in gpu_name:
        # PostgreSQL cannot store a NUL character in text.
        raise RegistrationError({"hardware": ["the hardware name contains a NUL character"]})
    normalised = normalise_gpu_name(gpu_name)
    if slug is None:
        slug = hardware_slug(
            gpu_name=normalised, memory_bytes=memory_bytes, self_reported=self_reported
        )
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
    """Read a GGUF file inside SPECBOARD_MODELS_DIR with the runner and register it.

    A file whose GGUF header says it holds test weights is marked so; reading a file again never
    clears a mark an admin set.
    """
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
    if not model.test_weights and info.test_weights:
        mark_test_weights(models=[model])
        model.test_weights = True
    return model


def retire_engine_build(*, release: str, note: str = "") -> int:
    """Mark an engine release as bad; its leaderboard rows leave the ranking. Returns rows retired."""
    with transaction.atomic():
        EngineBuild.objects.update_or_create(
            release=release, defaults={"retired": True, "note": note}
        )
        rows = LeaderboardEntry.objects.filter(engine_release=release)
        touched = set(rows.values_list("ranking_key", flat=True))
        retired = rows.update(retired=True)
        # Retired rows leave their rankings: they carry no rank (services.board.rerank).
        rerank_all(ranking_keys=touched)
        raise_board_version(row_set=True)
    return retired
