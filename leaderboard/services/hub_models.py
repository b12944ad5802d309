"""Models by Hugging Face reference: registering a Hub file at a commit, and users' requests.

`register_hub_model` resolves the revision to a commit, reads the file's size and sha256 from
the Hub (an LFS file's sha256 is in the tree listing and its linked ETag; for a file kept in git
the web host streams it once to compute it, storing nothing), then reads the GGUF header with
range requests of the first bytes (runner.hub) before anyone downloads the whole file (a DFlash
draft llama.cpp could not load is refused there, `registry.draft_file_problems`), and only then
writes one ModelFile row. Every failure is a field error and writes nothing. GPU hosts fetch
the file on first use (runner.model_cache). `request_model`, `approve_model_request` and
`refuse_model_request` keep the users' requests, an approval registering through the same path.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import cast

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from leaderboard.models import ModelFile, ModelRequest
from leaderboard.services.board import mark_test_weights
from leaderboard.services.errors import RegistrationError, ServiceError
from leaderboard.services.registry import (
    _model_reference_errors,
    draft_file_problems,
    model_role,
)
from runner.errors import ModelCheckError
from runner.gguf.inspect import ModelInfo
from runner.hub import HubError, HubFile, read_remote_header, resolve_hub_file, stream_sha256

# The Hub's own rules for repository ids: namespace/name of letters, digits, '-', '_', '.'.
_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_FILE = re.compile(r"[A-Za-z0-9._+\-/]{1,200}\.gguf")
_REVISION = re.compile(r"[A-Za-z0-9._/\-]{1,255}")
# A user may have this many requests waiting for an admin's answer at once.
MAX_PENDING_REQUESTS = 20


class ModelRequestError(ServiceError):
    """A model request cannot be made or decided; nothing was changed."""


def _reference_errors(*, hf_repo: str, hf_file: str, revision: str) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if not _REPO_ID.fullmatch(hf_repo) or ".." in hf_repo:
        errors["hf_repo"] = [f"{hf_repo!r} is not a repository id (namespace/name)"]
    if not _FILE.fullmatch(hf_file) or ".." in hf_file.split("/") or hf_file.startswith("/"):
        errors["hf_file"] = [f"{hf_file!r} is not a .gguf file path in a repository"]
    if revision and (not _REVISION.fullmatch(revision) or ".." in revision):
        errors["revision"] = [f"{revision!r} is not a branch, tag or commit"]
    return errors


def _hub_file(*, hf_repo: str, hf_file: str, revision: str) -> HubFile:
    try:
        return resolve_hub_file(
            repo=hf_repo,
            file=hf_file,
            revision=revision or None,
            endpoint=settings.SPECBOARD_HF_ENDPOINT,
            token=settings.SPECBOARD_HF_TOKEN,
        )
    except HubError as error:
        raise RegistrationError({error.field: [str(error)]}) from None


def register_hub_model(
    *,
    hf_repo: str,
    hf_file: str,
    revision: str = "",
    role: str | None = None,
    name: str | None = None,
    registered_by: User | None = None,
) -> ModelFile:
    """Register a GGUF file of a Hub repository at the commit its revision resolves to."""
    hf_repo, hf_file, revision = hf_repo.strip(), hf_file.strip(), (revision or "").strip()
    if errors := _reference_errors(hf_repo=hf_repo, hf_file=hf_file, revision=revision):
        raise RegistrationError(errors)
    hub_file = _hub_file(hf_repo=hf_repo, hf_file=hf_file, revision=revision)
    reference = hub_file.reference
    if problems := _model_reference_errors(reference):
        raise RegistrationError({"hf_file": problems})
    info, sha256 = _checked_header(hub_file)
    _refuse_changed_file(hub_file, sha256=sha256, hf_file=hf_file)
    role = model_role(role, architecture=info.architecture)
    display_name = _display_name(name, hf_repo=hf_repo, hf_file=hf_file, hub_file=hub_file)
    with transaction.atomic():
        model, _ = ModelFile.objects.update_or_create(
            path=reference,
            defaults={
                "name": display_name,
                "sha256": sha256,
                "size_bytes": hub_file.size_bytes,
                "architecture": info.architecture,
                "metadata": info.as_dict() | {"path": reference, "sha256": sha256},
                "role": role,
                "registered_by": registered_by,
                "hf_repo": hf_repo,
                "hf_file": hf_file,
                "hf_revision": hub_file.revision,
            },
        )
        if not model.test_weights and info.test_weights:
            mark_test_weights(models=[model])
            model.test_weights = True
    return model


def _checked_header(hub_file: HubFile) -> tuple[ModelInfo, str]:
    """The file's GGUF header, read from the Hub and checked as a draft's or target's, and its
    sha256 (the Hub's, else streamed)."""
    with tempfile.TemporaryDirectory(prefix="specboard-header-") as scratch:
        header_copy = Path(scratch) / "header.gguf"
        try:
            info = read_remote_header(
                hub_file, header_copy=header_copy, token=settings.SPECBOARD_HF_TOKEN
            )
            sha256 = hub_file.sha256 or stream_sha256(hub_file, token=settings.SPECBOARD_HF_TOKEN)
        except ModelCheckError as error:
            raise RegistrationError({"hf_file": [str(error)]}) from None
        except HubError as error:
            raise RegistrationError({error.field: [str(error)]}) from None
    if problems := draft_file_problems(info):
        raise RegistrationError({"hf_file": problems})
    return info, sha256


def _refuse_changed_file(hub_file: HubFile, *, sha256: str, hf_file: str) -> None:
    """Refuse a file registered before whose bytes the Hub now gives otherwise."""
    known = ModelFile.objects.filter(path=hub_file.reference).first()
    if known is not None and known.sha256 != sha256:
        raise RegistrationError(
            {
                "hf_file": [
                    f"{hf_file} at {hub_file.revision[:12]} was registered with sha256 "
                    f"{known.sha256[:16]}… but the Hub now gives {sha256[:16]}…: "
                    "a commit's files cannot change, so this endpoint is not to be trusted"
                ]
            }
        )


def _display_name(name: str | None, *, hf_repo: str, hf_file: str, hub_file: HubFile) -> str:
    """The name asked for, else repo/file@commit; refused where too long or another file's."""
    display_name = name or f"{hf_repo}/{Path(hf_file).stem}@{hub_file.revision[:7]}"
    # A CharField's max_length is set (the stubs type every field's as optional).
    limit = cast(int, ModelFile._meta.get_field("name").max_length)
    if len(display_name) > limit:
        raise RegistrationError(
            {
                "name": [
                    f"{display_name[:40]}… is longer than a model's name may be "
                    f"({limit} characters): give a name"
                ]
            }
        )
    if ModelFile.objects.filter(name=display_name).exclude(path=hub_file.reference).exists():
        raise RegistrationError(
            {"name": [f"another file is already registered as {display_name!r}"]}
        )
    return display_name


def request_model(
    *, requester: User, hf_repo: str, hf_file: str, revision: str = ""
) -> ModelRequest:
    """A signed-in user's request for a Hub model; an admin approves or refuses it."""
    hf_repo, hf_file, revision = hf_repo.strip(), hf_file.strip(), (revision or "").strip()
    if errors := _reference_errors(hf_repo=hf_repo, hf_file=hf_file, revision=revision):
        raise ModelRequestError(errors)
    pending = ModelRequest.objects.filter(
        requester=requester,
        hf_repo=hf_repo,
        hf_file=hf_file,
        revision=revision,
        state=ModelRequest.State.PENDING,
    )
    if pending.exists():
        raise ModelRequestError({"hf_file": ["you already asked for this file; it is pending"]})
    # Requests cost an admin's time: a user waits for answers before asking for more.
    waiting = ModelRequest.objects.filter(requester=requester, state=ModelRequest.State.PENDING)
    if waiting.count() >= MAX_PENDING_REQUESTS:
        raise ModelRequestError(
            {
                "hf_file": [
                    f"you have {MAX_PENDING_REQUESTS} requests waiting for an admin, the most "
                    "allowed; ask again once one is decided"
                ]
            }
        )
    return ModelRequest.objects.create(
        requester=requester, hf_repo=hf_repo, hf_file=hf_file, revision=revision
    )


def approve_model_request(*, model_request: ModelRequest, admin: User, note: str = "") -> ModelFile:
    """Register the requested file (as register_hub_model) and mark the request approved."""
    if model_request.state != ModelRequest.State.PENDING:
        raise ModelRequestError(f"this request was already {model_request.state}")
    model = register_hub_model(
        hf_repo=model_request.hf_repo,
        hf_file=model_request.hf_file,
        revision=model_request.revision,
        registered_by=admin,
    )
    _decide(model_request, state=ModelRequest.State.APPROVED, admin=admin, note=note, model=model)
    return model


def refuse_model_request(*, model_request: ModelRequest, admin: User, note: str = "") -> None:
    """Refuse a pending request, with a note the requester sees."""
    if model_request.state != ModelRequest.State.PENDING:
        raise ModelRequestError(f"this request was already {model_request.state}")
    _decide(model_request, state=ModelRequest.State.REFUSED, admin=admin, note=note, model=None)


def _decide(
    model_request: ModelRequest,
    *,
    state: str,
    admin: User,
    note: str,
    model: ModelFile | None,
) -> None:
    # Guarded: two admins deciding at once cannot both win.
    decided = ModelRequest.objects.filter(
        pk=model_request.pk, state=ModelRequest.State.PENDING
    ).update(
        state=state,
        decided_by=admin,
        decided_at=timezone.now(),
        note=note[:500],
        model=model,
    )
    if not decided:
        raise ModelRequestError("another admin decided this request first")
    model_request.refresh_from_db()
