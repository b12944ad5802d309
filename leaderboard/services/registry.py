"""The registry: hardware kinds, model files and engine builds.

A model is registered by reading its GGUF header with the runner (a DFlash draft that llama.cpp
could not load with any target is refused there: ``draft_file_problems``); a hardware kind (one
GPU or several: "2x RTX 3090 24GB", from the GPUs NVML shows on a host) gets the queue its GPU
workers consume; retiring an engine build takes its rows off the ranking."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils.text import slugify
from pydantic import ValidationError

from leaderboard.messaging.celery import gpu_queue
from leaderboard.models import (
    EngineBuild,
    Hardware,
    LeaderboardEntry,
    ModelFile,
)
from leaderboard.services.board import mark_test_weights, raise_board_version, rerank_all
from leaderboard.services.errors import RegistrationError
from runner.compatibility import dflash_draft_problem
from runner.config import MAX_GPUS, BenchmarkConfig, field_errors
from runner.errors import ModelCheckError
from runner.gguf.inspect import ModelInfo, inspect_model
from runner.provenance import describe_gpus, gpu_set_problem, normalise_gpu_name

DRAFT_ARCHITECTURES = frozenset({"dflash", "dflash-draft", "eagle3"})


# A hardware slug is at most 100 characters: room for the name, its digest and the suffix.
_SLUG_NAME_LENGTH = 76
_SELF_REPORTED_SUFFIX = "-self-reported"
_FAITHFUL_NAME = re.compile(r"[A-Za-z0-9 -]+")


def hardware_slug(
    *, gpu_name: str, memory_bytes: int | None = None, self_reported: bool, gpu_count: int = 1
) -> str:
    """The slug of a hardware kind; a name that slugify would not keep whole gets its digest.

    "RTX 4090" is `rtx-4090`, two of them with 24 GiB each `2x-rtx-4090-24gb`; names that differ
    only in what slugify drops (punctuation, other scripts, anything past its length) are
    different GPUs to their uploaders, so they must not land on one kind: `显卡` and `图形卡`
    would both slugify to nothing."""
    memory = f"-{round(memory_bytes / 2**30)}gb" if memory_bytes else ""
    count = f"{gpu_count}x-" if gpu_count > 1 else ""
    base = slugify(f"{count}{gpu_name}{memory}")
    faithful = _FAITHFUL_NAME.fullmatch(gpu_name) is not None and len(base) <= _SLUG_NAME_LENGTH
    if not faithful:
        name_digest = hashlib.sha256(gpu_name.encode()).hexdigest()[:8]
        base = f"{base[:_SLUG_NAME_LENGTH].strip('-')}-{name_digest}".lstrip("-")
    return base + (_SELF_REPORTED_SUFFIX if self_reported else "")


# Unicode's control and format characters (bidi overrides and isolates, zero-width spaces and
# joiners, the byte-order mark, soft hyphens) and the line and paragraph separators: in a name
# shown on every page, they hide text or make it read as another GPU's name.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def hidden_characters(text: str) -> list[str]:
    """The code points in `text` that do not show or that reorder the text around them
    ("U+202E", ...), each once, in the order they first appear."""
    found = (char for char in text if unicodedata.category(char) in _HIDDEN_CATEGORIES)
    return list(dict.fromkeys(f"U+{ord(char):04X}" for char in found))


def register_hardware(
    *,
    gpu_name: str,
    memory_bytes: int | None = None,
    driver: str = "",
    cuda: str = "",
    host: str = "",
    self_reported: bool = False,
    slug: str | None = None,
    gpu_count: int = 1,
    cpu_model: str = "",
) -> Hardware:
    """Find or create a hardware kind of gpu_count GPUs of one model (memory_bytes each), or a
    CPU host's kind with its CPU model (``runner.provenance.cpu_name`` on that machine);
    measured kinds get the queue their workers consume."""
    if "\x00" in gpu_name:
        # PostgreSQL cannot store a NUL character in text.
        raise RegistrationError({"hardware": ["the hardware name contains a NUL character"]})
    if hidden := hidden_characters(gpu_name):
        raise RegistrationError(
            {
                "hardware": [
                    "the hardware name contains characters that do not show or that reorder "
                    f"the text around them ({', '.join(hidden)}): type the name plainly"
                ]
            }
        )
    if not 1 <= gpu_count <= MAX_GPUS:
        raise RegistrationError({"gpu_count": [f"a kind has 1 to {MAX_GPUS} GPUs"]})
    normalised = normalise_gpu_name(gpu_name)
    gpus = [{"name": normalised, "memory_bytes": memory_bytes}] * gpu_count
    return _hardware_kind(
        gpus=gpus,
        slug=slug,
        self_reported=self_reported,
        driver=driver,
        cuda=cuda,
        host=host,
        cpu_model=cpu_model.strip()[:200],
    )


def register_hardware_from_gpus(
    *,
    gpus: list[dict],
    driver: str = "",
    cuda: str = "",
    host: str = "",
    slug: str | None = None,
) -> Hardware:
    """Find or create the kind that a host's GPUs make, as NVML describes them on the host
    (``runner.provenance.visible_gpus``: every GPU's name and memory): one RTX 3090 is
    `rtx-3090-24gb`, two are `2x-rtx-3090-24gb`, a 4090 beside a 3090 a kind of its own."""
    problems = advertised_gpu_problems(gpus)
    if problems or not gpus:
        raise RegistrationError({"gpus": problems or ["a hardware kind needs at least one GPU"]})
    described = [
        {"name": normalise_gpu_name(gpu["name"]), "memory_bytes": gpu.get("memory_bytes")}
        for gpu in gpus
    ]
    return _hardware_kind(
        gpus=described, slug=slug, self_reported=False, driver=driver, cuda=cuda, host=host
    )


def advertised_gpu_problems(gpus: object) -> list[str]:
    """Why a host's list of GPUs (from NVML on the host, or a signed message) is not one."""
    if not isinstance(gpus, list) or len(gpus) > MAX_GPUS:
        return [f"the GPUs must be a list of at most {MAX_GPUS}"]
    for gpu in gpus:
        if problem := _gpu_problem(gpu):
            return [problem]
    return []


def _gpu_problem(gpu: object) -> str | None:
    """Why one advertised GPU is not one: a name of 1 to 200 characters, a byte count or none."""
    name = gpu.get("name") if isinstance(gpu, dict) else None
    memory = gpu.get("memory_bytes") if isinstance(gpu, dict) else None
    if not isinstance(name, str) or not 0 < len(name) <= 200 or "\x00" in name:
        return "every GPU needs a name of 1 to 200 characters"
    if memory is not None and not _is_byte_count(memory):
        return "a GPU's memory must be a positive whole number of bytes"
    return None


def _is_byte_count(memory: object) -> bool:
    return isinstance(memory, int) and not isinstance(memory, bool) and 0 < memory < 2**53


def gpus_serve_kind_problem(*, hardware: Hardware, gpus: object) -> str | None:
    """Why a host whose engine sees these GPUs (``runner.provenance.visible_gpus``) cannot serve
    this kind, or None (``runner.provenance.gpu_set_problem``: as many GPUs as the kind has, and
    for a kind of several each of its model and memory, in order)."""
    if (problems := advertised_gpu_problems(gpus)) or not isinstance(gpus, list):
        return problems[0] if problems else "the GPUs must be a list"
    return gpu_set_problem(wanted=hardware.gpu_list(), have=gpus, label=hardware.label)


def _hardware_kind(
    *,
    gpus: list[dict],
    slug: str | None,
    self_reported: bool,
    driver: str,
    cuda: str,
    host: str,
    cpu_model: str = "",
) -> Hardware:
    names = list(dict.fromkeys(gpu["name"] for gpu in gpus))
    memories = [gpu["memory_bytes"] for gpu in gpus if gpu["memory_bytes"]]
    gpu_name = " + ".join(names)
    memory_bytes = min(memories) if len(memories) == len(gpus) else None
    if slug is None:
        slug = _kind_slug(
            gpus,
            mixed=len(names) > 1 or len(set(memories)) > 1,
            gpu_name=gpu_name,
            memory_bytes=memory_bytes,
            self_reported=self_reported,
        )
    hardware, created = Hardware.objects.get_or_create(
        slug=slug,
        defaults={
            "gpu_name": gpu_name,
            "memory_bytes": memory_bytes,
            "gpu_count": len(gpus),
            # A single GPU's kind keeps the shape kinds always had: its name and memory alone.
            "gpus": gpus if len(gpus) > 1 else [],
            "driver": driver,
            "cuda": cuda,
            "host": host,
            "cpu_model": cpu_model,
            "self_reported": self_reported,
            "queue_name": "" if self_reported else gpu_queue(slug),
        },
    )
    if created:
        # The hardware lists (selectors.hardware_summaries, the /best/ form) are cached with
        # the board's row set: a new kind is listed at once.
        raise_board_version(row_set=True)
    return hardware


def _kind_slug(
    gpus: list[dict], *, mixed: bool, gpu_name: str, memory_bytes: int | None, self_reported: bool
) -> str:
    """A new kind's slug: a mixed set is named by every GPU in order, each with its memory."""
    return hardware_slug(
        gpu_name=describe_gpus(gpus) if mixed else gpu_name,
        memory_bytes=None if mixed else memory_bytes,
        self_reported=self_reported,
        gpu_count=1 if mixed else len(gpus),
    )


def _model_reference_errors(reference: str) -> list[str]:
    try:
        BenchmarkConfig.model_validate({"target_model": reference})
    except ValidationError as error:
        return field_errors(error).get("target_model", [])
    return []


def draft_file_problems(info: ModelInfo) -> list[str]:
    """Why a DFlash draft cannot load in llama.cpp whatever target it is paired with (its keys
    and tensors: ``runner.compatibility.dflash_draft_problem``), so is not registered; what it
    needs of its target is checked when a config pairs them."""
    if info.architecture != "dflash":
        return []
    problem = dflash_draft_problem(info)
    return [problem] if problem is not None else []


def model_role(role: str | None, *, architecture: str) -> str:
    """The role a model file is registered in: the one asked for, else the one its
    architecture says (a draft's, else a target's)."""
    if role is None:
        in_drafts = architecture in DRAFT_ARCHITECTURES
        role = ModelFile.Role.DRAFT if in_drafts else ModelFile.Role.TARGET
    if role not in ModelFile.Role.values:
        raise RegistrationError(
            {"role": [f"role must be one of {', '.join(ModelFile.Role.values)}"]}
        )
    return role


def _in_models_dir(path: str) -> tuple[Path, str]:
    """A file's full path and its path inside SPECBOARD_MODELS_DIR; refused outside it."""
    base = Path(settings.SPECBOARD_MODELS_DIR).resolve()
    candidate = Path(path)
    full = (candidate if candidate.is_absolute() else base / candidate).resolve()
    if not full.is_relative_to(base):
        raise RegistrationError({"path": [f"{path} is outside the models directory {base}"]})
    relative = full.relative_to(base).as_posix()
    if problems := _model_reference_errors(relative):
        raise RegistrationError({"path": problems})
    return full, relative


def register_model(
    *,
    path: str,
    role: str | None = None,
    name: str | None = None,
    registered_by: User | None = None,
) -> ModelFile:
    """Read a GGUF file inside SPECBOARD_MODELS_DIR with the runner and register it.

    A file whose GGUF header says it holds test weights is marked so; reading a file again never
    clears a mark an admin set.
    """
    full, relative = _in_models_dir(path)
    try:
        info = inspect_model(full)
    except ModelCheckError as error:
        raise RegistrationError({"path": [str(error)]}) from None
    if problems := draft_file_problems(info):
        raise RegistrationError({"path": problems})
    role = model_role(role, architecture=info.architecture)
    display_name = name or full.stem
    clash = ModelFile.objects.filter(name=display_name).exclude(path=relative)
    if clash.exists():
        raise RegistrationError(
            {"name": [f"another file is already registered as {display_name!r}"]}
        )
    read = {
        "name": display_name,
        "sha256": info.sha256,
        "size_bytes": info.size_bytes,
        "architecture": info.architecture,
        "metadata": info.as_dict() | {"path": relative},
        "role": role,
        "registered_by": registered_by,
    }
    # A new file is created with its mark (no row can use it yet); one registered before has
    # rows that move off the ranking with the mark.
    model, _ = ModelFile.objects.update_or_create(
        path=relative, defaults=read, create_defaults=read | {"test_weights": info.test_weights}
    )
    if not model.test_weights and info.test_weights:
        mark_test_weights(models=[model])
        model.test_weights = True
    # A config page's "Run this again" follows the registered models: its cached copy goes.
    raise_board_version()
    return model


def retire_engine_build(*, release: str, note: str = "") -> int:
    """Mark an engine release as bad; its leaderboard rows leave the ranking. Returns rows
    retired."""
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
