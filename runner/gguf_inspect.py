"""Read GGUF metadata and check that a target and draft can run together before starting a server."""

import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gguf import GGUFReader, LlamaFileType

from runner.errors import ModelCheckError

GGUF_MAGIC = b"GGUF"
DEFAULT_DFLASH_BLOCK_SIZE = 16
# llama.cpp accepts a draft whose vocabulary differs by up to this many tokens (Qwen2.5 family)
SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128
DRAFT_MODEL_SPEC_TYPES = frozenset({"draft-simple", "draft-eagle3", "draft-dflash", "draft-dspark"})
DFLASH_SPEC_TYPES = frozenset({"draft-dflash", "draft-dspark"})

_sha_cache: dict[tuple[str, int, int], str] = {}


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
    """Return the hex sha256 of a file, read in chunks; cached by path, size and mtime."""
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    if key not in _sha_cache:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        _sha_cache[key] = digest.hexdigest()
    return _sha_cache[key]


def _field(reader: GGUFReader, key: str) -> Any:
    field = reader.get_field(key)
    return None if field is None else field.contents()


def _array_len(reader: GGUFReader, key: str) -> int | None:
    field = reader.get_field(key)
    return None if field is None else len(field.data)


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


def _read(path: Path) -> GGUFReader:
    size = path.stat().st_size
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise ModelCheckError(f"cannot read model file {path}: {e.strerror or e}") from e
    if magic != GGUF_MAGIC:
        raise ModelCheckError(f"{path} is not a GGUF file (bad magic)")
    try:
        reader = GGUFReader(path)
    except Exception as e:  # the reader fails with whatever numpy hits first on a short file
        raise ModelCheckError(
            f"{path} is truncated or corrupt: its header or tensors cannot be read "
            f"({size} bytes; reader error: {_one_line(e)})"
        ) from e
    for tensor in reader.tensors:
        if tensor.data_offset + tensor.n_bytes > size:
            raise ModelCheckError(
                f"{path} is truncated or corrupt: tensor {tensor.name} ends at byte "
                f"{tensor.data_offset + tensor.n_bytes} but the file has {size} bytes"
            )
    return reader


def _one_line(error: Exception) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:200]


def inspect_model(path: str | Path) -> ModelInfo:
    """Read a GGUF file's metadata; raise ModelCheckError if it is missing or unreadable."""
    path = Path(path)
    if not path.is_file():
        raise ModelCheckError(f"model file not found: {path}")
    reader = _read(path)
    try:
        arch = _field(reader, "general.architecture")
        if not isinstance(arch, str):
            raise ModelCheckError(f"{path} is truncated or corrupt: no general.architecture key")

        def arch_key(key: str) -> Any:
            return _field(reader, f"{arch}.{key}")

        vocab_size = _array_len(reader, "tokenizer.ggml.tokens") or _int_or_none(
            arch_key("vocab_size")
        )
        if vocab_size is None:
            embd = next((t for t in reader.tensors if t.name == "token_embd.weight"), None)
            vocab_size = int(embd.shape[-1]) if embd is not None else None
        target_layers = arch_key("target_layers")
        layers = [int(v) for v in target_layers] if target_layers is not None else None
        info = ModelInfo(
            path=str(path),
            sha256=sha256_file(path),
            size_bytes=path.stat().st_size,
            architecture=arch,
            file_type=_file_type_name(_int_or_none(_field(reader, "general.file_type"))),
            n_embd=_int_or_none(arch_key("embedding_length")),
            block_count=_int_or_none(arch_key("block_count")),
            vocab_size=vocab_size,
            context_length=_int_or_none(arch_key("context_length")),
            name=_field(reader, "general.name"),
            dflash_target_layers=layers,
            dflash_block_size=_int_or_none(arch_key("block_size")),
            nextn_predict_layers=_int_or_none(arch_key("nextn_predict_layers")),
        )
    except ModelCheckError:
        raise
    except Exception as e:
        raise ModelCheckError(f"{path} is truncated or corrupt: {_one_line(e)}") from e
    return info


def max_dflash_n_max(draft: ModelInfo) -> int:
    """Largest useful --spec-draft-n-max for a DFlash draft: its block size minus one."""
    return (draft.dflash_block_size or DEFAULT_DFLASH_BLOCK_SIZE) - 1


def check_speculative_pair(
    *, target: ModelInfo, draft: ModelInfo | None, spec_types: list[str]
) -> None:
    """Raise ModelCheckError if llama-server cannot run this target/draft with these spec types."""
    types = set(spec_types)
    if "draft-mtp" in types and not target.nextn_predict_layers:
        raise ModelCheckError(
            f"draft-mtp needs a target with an MTP head, but {target.path} "
            f"({target.architecture}) has no nextn_predict_layers"
        )
    needs_draft = sorted(types & DRAFT_MODEL_SPEC_TYPES)
    if needs_draft and draft is None:
        raise ModelCheckError(f"{needs_draft[0]} needs a draft model (-md), but none was given")
    if draft is None:
        return
    if draft.architecture == "dflash-draft":
        raise ModelCheckError(
            f"{draft.path} is a pre-merge DFlash file (architecture dflash-draft) that llama.cpp "
            "cannot load; use a draft converted with architecture 'dflash'"
        )
    if types & DFLASH_SPEC_TYPES:
        _check_dflash(target, draft)
    elif needs_draft:
        _check_vocab(target, draft, exact=False)


def _check_dflash(target: ModelInfo, draft: ModelInfo) -> None:
    if draft.architecture != "dflash":
        raise ModelCheckError(
            f"draft-dflash needs a draft with architecture 'dflash', but {draft.path} "
            f"is '{draft.architecture}'"
        )
    if not draft.dflash_target_layers:
        raise ModelCheckError(f"DFlash draft {draft.path} has no dflash.target_layers key")
    n_layers = target.main_layers
    if n_layers is not None:
        bad = [layer for layer in draft.dflash_target_layers if not 0 <= layer < n_layers]
        if bad:
            raise ModelCheckError(
                f"DFlash draft {draft.path} reads target layers {draft.dflash_target_layers}, "
                f"but target {target.path} has only {n_layers} layers (layer {bad[0]} is out of range)"
            )
    if draft.n_embd != target.n_embd:
        raise ModelCheckError(
            f"DFlash draft {draft.path} has n_embd {draft.n_embd} but target {target.path} "
            f"has {target.n_embd}; the draft must be trained for this target"
        )
    _check_vocab(target, draft, exact=True)


def _check_vocab(target: ModelInfo, draft: ModelInfo, *, exact: bool) -> None:
    if target.vocab_size is None or draft.vocab_size is None:
        return
    diff = abs(target.vocab_size - draft.vocab_size)
    if diff > (0 if exact else SPEC_VOCAB_MAX_SIZE_DIFFERENCE):
        raise ModelCheckError(
            f"draft {draft.path} has a vocabulary of {draft.vocab_size} tokens but target "
            f"{target.path} has {target.vocab_size}; they must share a tokenizer"
        )
