"""Read a GGUF file's metadata: what the runner (and the service's model registry) knows of a model.

This module owns ``ModelInfo`` and ``inspect_model``: the header and tensor table are read once
with ``runner.gguf.header`` (which decodes only the keys asked for, so a real model's vocabulary
costs milliseconds), a short or corrupt file is refused with one readable line, and the file's
sha256 is cached by inode, size and mtime. Whether two models can run together is
``runner.compatibility``'s business.
"""

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gguf import LlamaFileType

from runner.errors import ModelCheckError
from runner.gguf.header import (
    GGUF_MAGIC,
    GGUFHeader,
    HeaderError,
    IncompleteHeader,
    NotGGUF,
    parse_header,
    read_header,
)
from runner.gguf.tiny_models import TEST_WEIGHTS_KEY
from runner.roofline import weight_bytes_per_token

# GGUF_MAGIC stays importable from here (runner.hub checks a remote file's first bytes with it).
__all__ = [
    "GGUF_MAGIC",
    "ModelInfo",
    "inspect_header",
    "inspect_model",
    "inspect_prefix",
    "marks_test_weights",
    "sha256_file",
]

# A file's digest by device, inode, size and modification time: a file renamed into place (the
# model cache's finished download) keeps its digest, a file replaced at the same path does not.
_sha_cache: dict[tuple[int, int, int, int], str] = {}


# llama.cpp compares a draft's token texts with its target's from this id on (common/speculative.cpp
# SPEC_VOCAB_CHECK_START_TOKEN_ID): the first few special tokens may differ.
VOCAB_CHECK_START_TOKEN_ID = 5
# The architectures whose tensor table is recorded: a merged DFlash draft and a pre-merge one.
DFLASH_ARCHITECTURES = frozenset({"dflash", "dflash-draft"})
# llama.cpp's LLAMA_MAX_LAYERS (src/llama-hparams.h): a model with more layers does not load.
LLAMA_MAX_LAYERS = 512
# A DFlash draft has a few dozen tensors (3, and 11 a layer): a file of this architecture with
# more is refused rather than its table recorded in the registry and in every result.
MAX_DRAFT_TENSORS = 4096
MASK_TOKEN_KEY = "tokenizer.ggml.mask_token_id"

# llama.cpp's architecture names (llama, qwen3, gemma3, dflash, ...): short and plain; the
# registry's column holds 64 characters.
MAX_ARCHITECTURE_CHARS = 64
ARCHITECTURE_NAME = re.compile(rf"[A-Za-z0-9._-]{{1,{MAX_ARCHITECTURE_CHARS}}}")


@dataclass(frozen=True)
class ModelInfo:
    """What the runner needs to know about one GGUF file."""

    path: str
    sha256: str
    size_bytes: int
    architecture: str
    file_type: str | int | None
    n_embd: int | None
    block_count: int | None
    vocab_size: int | None
    context_length: int | None
    name: str | None
    dflash_target_layers: list[int] | None
    dflash_block_size: int | None
    nextn_predict_layers: int | None
    # runner.roofline.weight_bytes_per_token; None for metadata recorded before it existed.
    weight_bytes_per_token: int | None = None
    # Whether the header marks the file as test weights (``marks_test_weights``); False in
    # metadata recorded before it existed, where the registry's own mark is what counts.
    test_weights: bool = False
    # K and V cache elements one token of context costs over the main layers (llama.cpp keeps
    # key_length x head_count_kv keys and as many values per layer); None where unknown.
    kv_elements_per_token: int | None = None
    # tokenizer.ggml.mask_token_id: the token a DFlash draft fills its block with.
    mask_token_id: int | None = None
    # The sha256 of the tokenizer's model name and of its token texts from id
    # VOCAB_CHECK_START_TOKEN_ID on: llama.cpp's check that a draft and its target share a
    # vocabulary, for two files of the same vocabulary size. None where unknown.
    vocab_digest: str | None = None
    # The tensor table of a DFlash file (name -> GGML dimensions, row length first), which
    # runner.compatibility checks against what llama.cpp loads; None for other files, and in
    # metadata recorded before it existed.
    tensor_shapes: dict[str, list[int]] | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return asdict(self)

    @property
    def main_layers(self) -> int | None:
        """Decoder blocks that run in the main pass (MTP blocks sit after them)."""
        if self.block_count is None:
            return None
        return self.block_count - (self.nextn_predict_layers or 0)


def sha256_file(path: str | Path) -> str:
    """Return the hex sha256 of a file, read in chunks; cached by the file (its inode), size and
    mtime, so a file is read once however it is named."""
    st = os.stat(path)
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _sha_cache:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        _sha_cache[key] = digest.hexdigest()
    return _sha_cache[key]


def _file_type_name(value: int | None) -> str | int | None:
    if value is None:
        return None
    try:
        name = LlamaFileType(value).name
    except ValueError:
        return value
    return name.removeprefix("MOSTLY_").removeprefix("ALL_")


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _layer_numbers(path: Path, key: str, value: Any) -> list[int] | None:
    """An array of layer numbers (a DFlash draft's target layers), None if the key is absent,
    or a clear error: llama.cpp reads it as an array of whole numbers."""
    if value is None:
        return None
    if not isinstance(value, list) or any(
        isinstance(item, bool) or not isinstance(item, int) for item in value
    ):
        shown = repr(value)[:40]
        raise ModelCheckError(f"{path} has {key} {shown}, which is not an array of layer numbers")
    return value


def _whole(path: Path, key: str, value: Any) -> int | None:
    """A key's value that must be a whole number (llama.cpp reads it as one), None if the key is
    absent, or a clear error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        shown = repr(value)[:40]
        raise ModelCheckError(f"{path} has {key} {shown}, which is not a whole number")
    return value


def _read(path: Path) -> GGUFHeader:
    size = path.stat().st_size
    try:
        header = read_header(path)
    except OSError as e:
        raise ModelCheckError(f"cannot read model file {path}: {e.strerror or e}") from e
    except NotGGUF:
        raise ModelCheckError(f"{path} is not a GGUF file (bad magic)") from None
    except HeaderError as e:
        raise ModelCheckError(_unreadable(path, size, e)) from None
    _check_tensors_fit(path, header, size)
    return header


def _unreadable(path: str | Path, size: int, error: Exception) -> str:
    return (
        f"{path} is truncated or corrupt: its header or tensors cannot be read "
        f"({size} bytes; reader error: {_one_line(error)})"
    )


def _check_tensors_fit(path: str | Path, header: GGUFHeader, size: int) -> None:
    for tensor in header.tensors:
        if tensor.data_offset + tensor.n_bytes > size:
            raise ModelCheckError(
                f"{path} is truncated or corrupt: tensor {tensor.name} ends at byte "
                f"{tensor.data_offset + tensor.n_bytes} but the file has {size} bytes"
            )


def _one_line(error: Exception) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:200]


def marks_test_weights(header: GGUFHeader) -> bool:
    """Whether a header says its file holds test weights: the tiny writer's own key, or
    llama.cpp's built-in `test` tokenizer, which no real model uses (older tiny files have only
    that)."""
    mark = header.contents(TEST_WEIGHTS_KEY)
    if mark is not None and bool(mark):
        return True
    return bool(header.contents("tokenizer.ggml.model") == "test")


# Files already read, by path, size and modification time: a file that changes is read again.
_READ: dict[tuple[str, int, int], ModelInfo] = {}
_READ_LIMIT = 256


def inspect_model(path: str | Path) -> ModelInfo:
    """Read a GGUF file's metadata; raise ModelCheckError if it is missing or unreadable."""
    path = Path(path)
    if not path.is_file():
        raise ModelCheckError(f"model file not found: {path}")
    stat = path.stat()
    seen = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if (known := _READ.get(seen)) is not None:
        return known
    info = _inspect(path, _read(path))
    if len(_READ) >= _READ_LIMIT:
        _READ.clear()
    _READ[seen] = info
    return info


def inspect_header(path: str | Path, *, sha256: str) -> tuple[ModelInfo, int]:
    """Read the metadata of a copy of a GGUF file's header (a file's first bytes in a sparse
    file of the whole size), trusting the given sha256; returns the info and the offset where
    the header ends (the tensor data starts)."""
    path = Path(path)
    header = _read(path)
    return _inspect(path, header, sha256=sha256), header.data_offset


def inspect_prefix(
    prefix: bytes, *, file_size: int, sha256: str, path: str
) -> tuple[ModelInfo, int] | None:
    """Read the metadata of a file of file_size bytes from its first bytes (runner.hub: a
    remote file's range requests), trusting the given sha256 and naming it path; returns the
    info and where the tensor data starts, or None if the prefix ends before the header does."""
    try:
        header = parse_header(prefix, file_size=file_size)
    except IncompleteHeader:
        return None
    except NotGGUF:
        raise ModelCheckError(f"{path} is not a GGUF file (bad magic)") from None
    except HeaderError as e:
        raise ModelCheckError(_unreadable(path, file_size, e)) from None
    _check_tensors_fit(path, header, file_size)
    info = _inspect(Path(path), header, sha256=sha256, size_bytes=file_size)
    return info, header.data_offset


def _per_layer(value: Any, layers: int) -> list[int] | None:
    """A per-layer attention figure (one number for every layer, or one per layer) as a list."""
    if value is None:
        return None
    return ([int(v) for v in value] if isinstance(value, list) else [int(value)] * layers)[:layers]


def _kv_elements_per_token(arch_key: Callable[[str], Any], *, layers: int | None) -> int | None:
    """K and V elements per token of context over the first ``layers`` layers, from the
    attention keys (head counts may be one number or one per layer); None where unknown."""
    if layers is None:
        return None
    heads = _per_layer(arch_key("attention.head_count"), layers)
    if not heads or not heads[0]:
        return None
    kv_heads = _per_layer(arch_key("attention.head_count_kv"), layers) or heads
    key_length = _int_or_none(arch_key("attention.key_length"))
    if key_length is None:
        embd = _int_or_none(arch_key("embedding_length"))
        if embd is None:
            return None
        key_length = embd // heads[0]
    value_length = _int_or_none(arch_key("attention.value_length")) or key_length
    return sum(kv_heads) * (key_length + value_length)


def _vocab_digest(header: GGUFHeader) -> str | None:
    """The digest of the vocabulary as llama.cpp compares a draft's with its target's: the
    tokenizer's model name and the token texts from VOCAB_CHECK_START_TOKEN_ID on."""
    model = header.contents("tokenizer.ggml.model")
    return header.array_digest(
        "tokenizer.ggml.tokens", skip=VOCAB_CHECK_START_TOKEN_ID, salt=f"{model}\n".encode()
    )


def _inspect(
    path: Path, header: GGUFHeader, *, sha256: str | None = None, size_bytes: int | None = None
) -> ModelInfo:
    try:
        return _model_info(path, header, sha256=sha256, size_bytes=size_bytes)
    except ModelCheckError:
        raise
    except Exception as e:
        raise ModelCheckError(f"{path} is truncated or corrupt: {_one_line(e)}") from e


def _model_info(
    path: Path, header: GGUFHeader, *, sha256: str | None, size_bytes: int | None
) -> ModelInfo:
    """What a GGUF header says of its model, each field checked as llama.cpp would."""
    arch = _architecture(path, header)

    def arch_key(key: str) -> Any:
        return header.contents(f"{arch}.{key}")

    vocab_size = _vocab_size(header, arch_key)
    layers = _layer_numbers(path, f"{arch}.target_layers", arch_key("target_layers"))
    block_count = _block_count(path, arch, arch_key)
    nextn_layers = _int_or_none(arch_key("nextn_predict_layers"))
    main_layers = block_count - nextn_layers if block_count and nextn_layers else None
    tensor_shapes = _draft_tensor_shapes(path, header, arch)
    return ModelInfo(
        path=str(path),
        sha256=sha256 if sha256 is not None else sha256_file(path),
        size_bytes=size_bytes if size_bytes is not None else path.stat().st_size,
        architecture=arch,
        file_type=_file_type_name(_int_or_none(header.contents("general.file_type"))),
        n_embd=_int_or_none(arch_key("embedding_length")),
        block_count=block_count,
        vocab_size=vocab_size,
        context_length=_int_or_none(arch_key("context_length")),
        name=header.contents("general.name"),
        dflash_target_layers=layers,
        dflash_block_size=_whole(path, f"{arch}.block_size", arch_key("block_size")),
        nextn_predict_layers=nextn_layers,
        weight_bytes_per_token=weight_bytes_per_token(header.tensors, main_layers=main_layers),
        test_weights=marks_test_weights(header),
        kv_elements_per_token=_kv_elements_per_token(arch_key, layers=main_layers or block_count),
        mask_token_id=_whole(path, MASK_TOKEN_KEY, header.contents(MASK_TOKEN_KEY)),
        vocab_digest=_vocab_digest(header),
        tensor_shapes=tensor_shapes,
    )


def _draft_tensor_shapes(path: Path, header: GGUFHeader, arch: str) -> dict[str, list[int]] | None:
    """A DFlash draft's tensor shapes by name, refused beyond what a draft has; None for any
    other architecture."""
    if arch not in DFLASH_ARCHITECTURES:
        return None
    if len(header.tensors) > MAX_DRAFT_TENSORS:
        raise ModelCheckError(
            f"{path} has {len(header.tensors)} tensors: a DFlash draft has a few dozen "
            f"(at most {MAX_DRAFT_TENSORS} are read)"
        )
    return {t.name: [int(d) for d in t.dims] for t in header.tensors}


def _architecture(path: Path, header: GGUFHeader) -> str:
    """The file's general.architecture, refused where llama.cpp could not have it."""
    arch = header.contents("general.architecture")
    if not isinstance(arch, str):
        raise ModelCheckError(f"{path} is truncated or corrupt: no general.architecture key")
    if not ARCHITECTURE_NAME.fullmatch(arch):
        raise ModelCheckError(
            f"{path} names an architecture llama.cpp does not have: {arch[:80]!r} "
            f"(at most {MAX_ARCHITECTURE_CHARS} letters, digits, '.', '_' or '-')"
        )
    return arch


def _vocab_size(header: GGUFHeader, arch_key: Callable[[str], Any]) -> int | None:
    """The vocabulary's size: its token list's, the architecture's key, or the embedding's rows."""
    vocab_size = header.array_len("tokenizer.ggml.tokens") or _int_or_none(arch_key("vocab_size"))
    if vocab_size is None:
        embd = next((t for t in header.tensors if t.name == "token_embd.weight"), None)
        vocab_size = int(embd.shape[-1]) if embd is not None else None
    return vocab_size


def _block_count(path: Path, arch: str, arch_key: Callable[[str], Any]) -> int | None:
    """The model's layer count, refused above what llama.cpp loads."""
    block_count = _int_or_none(arch_key("block_count"))
    if block_count is not None and not 0 <= block_count <= LLAMA_MAX_LAYERS:
        # Per-layer figures are built for every layer: a hostile count must stop here.
        raise ModelCheckError(
            f"{path} has {arch}.block_count {block_count}; llama.cpp loads at most "
            f"{LLAMA_MAX_LAYERS} layers"
        )
    return block_count
