"""Parse a GGUF file's header (GGUF v2 and v3): its key/value metadata and its tensor table.

This module owns ``read_header`` (a local file, read in growing chunks up to where its tensor
data starts) and ``parse_header`` (the first bytes of a file of known size, for runner.hub's
range requests). Unlike ``gguf.GGUFReader`` it maps no tensor data and builds no Python objects
for values nobody asks for: while parsing, arrays are walked by their lengths (a real model's
262k-token vocabulary is counted, not decoded) and strings are skipped; ``GGUFHeader.contents``
decodes one field when asked, with ``gguf.ReaderField.contents()``'s meaning. Every length is
checked against the file's size and the header may not exceed ``MAX_HEADER_BYTES``, so a
hostile file cannot make it read or allocate more than that.
"""

from __future__ import annotations

import hashlib
import math
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
# Bounds no real file comes near: the GGUF spec allows keys of up to 65535 bytes, ggml tensors
# have at most four dimensions, and a real model's tokenizer makes its header 5-20 MiB.
MAX_HEADER_BYTES = 256 << 20
MAX_NAME_BYTES = 65535
MAX_DIMS = 4
MAX_ARRAY_NESTING = 8
FIRST_READ_BYTES = 1 << 20

STRING = GGUFValueType.STRING
ARRAY = GGUFValueType.ARRAY
# struct codes of the fixed-size value types.
_SCALAR_CODES = {
    GGUFValueType.UINT8: "B",
    GGUFValueType.INT8: "b",
    GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I",
    GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f",
    GGUFValueType.BOOL: "?",
    GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
}
_SCALAR_SIZES = {kind: struct.calcsize("<" + code) for kind, code in _SCALAR_CODES.items()}
_VALUE_TYPES = frozenset(int(kind) for kind in GGUFValueType)
# The fewest bytes one key/value pair (key length, type, a one-byte value) and one tensor info
# (name length, dimension count, type, offset) take: counts beyond what fits are refused at once.
_MIN_KV_BYTES = 8 + 4 + 1
_MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8


class HeaderError(ValueError):
    """The header cannot be parsed; the message says why in one line."""


class NotGGUF(HeaderError):
    """The file does not start with the GGUF magic."""


class IncompleteHeader(HeaderError):
    """The bytes given end before the header does; ``needed`` is how many it takes at least."""

    def __init__(self, needed: int) -> None:
        super().__init__(f"the header needs at least the first {needed} bytes")
        self.needed = needed


@dataclass(frozen=True)
class HeaderField:
    """One key/value pair as the header has it (GGUFReader's ``ReaderField``).

    ``types`` is the value's type, for an array followed by its first item's types; ``length``
    is the number of values (an array's items, nested arrays flattened); ``value`` holds a
    fixed-size scalar, decoded while parsing; ``end`` is where the value's bytes end."""

    name: str
    types: tuple[int, ...]
    offset: int
    length: int = 1
    value: Any = None
    end: int = 0


@dataclass(frozen=True)
class TensorInfo:
    """One entry of the tensor table: name, GGML dimensions (row length first), type, and where
    its data lies (``data_offset`` from the start of the file, ``n_bytes`` long)."""

    name: str
    dims: tuple[int, ...]
    tensor_type: int
    data_offset: int
    n_elements: int
    n_bytes: int

    @property
    def shape(self) -> tuple[int, ...]:
        """GGUFReader's name for the dimensions (``runner.roofline.Tensor``)."""
        return self.dims


@dataclass(frozen=True)
class GGUFHeader:
    """A parsed header; ``data`` holds its bytes (up to the end of the tensor table)."""

    version: int
    byte_order: str
    fields: dict[str, HeaderField]
    tensors: tuple[TensorInfo, ...]
    alignment: int
    data_offset: int
    file_size: int
    data: bytes = field(repr=False)

    def contents(self, key: str) -> Any:
        """A field's value as ``gguf.ReaderField.contents()`` gives it (a string decoded as
        UTF-8, an array as a flat list), or None if the header has no such key."""
        found = self.fields.get(key)
        if found is None:
            return None
        kind = found.types[0]
        if kind == STRING:
            return _Cursor(self.data, len(self.data), self.byte_order).string(found.offset)
        if kind != ARRAY:
            return found.value
        cursor = _Cursor(self.data, len(self.data), self.byte_order)
        leaves: list[tuple[int, int]] = []
        cursor.array_leaves(found.offset, leaves)
        if found.types[-1] == STRING:
            return [cursor.string(offset) for _, offset in leaves]
        return [cursor.scalar(item, offset) for item, offset in leaves]

    def array_digest(self, key: str, *, skip: int = 0, salt: bytes = b"") -> str | None:
        """The sha256 of ``salt`` and a flat array's items as the file stores them (a string as
        its length and bytes), leaving out its first ``skip`` items; None if there is no such
        array or it has no more items. Two arrays of one byte order have the same digest (with
        the same salt) exactly when their items from ``skip`` on are the same."""
        found = self.fields.get(key)
        if found is None or found.types[0] != ARRAY or len(found.types) != 2:
            return None
        if found.length <= skip:
            return None
        cursor = _Cursor(self.data, len(self.data), self.byte_order)
        start = found.offset + 12
        if found.types[1] == STRING:
            for _ in range(skip):
                start = cursor.string_end(start)
        else:
            start += skip * _SCALAR_SIZES[GGUFValueType(found.types[1])]
        digest = hashlib.sha256(salt)
        digest.update(self.data[start : found.end])
        return digest.hexdigest()

    def array_len(self, key: str) -> int | None:
        """How many values a field holds (GGUFReader's ``len(field.data)``), or None."""
        found = self.fields.get(key)
        return None if found is None else found.length


def read_header(path: str | Path) -> GGUFHeader:
    """Parse a local GGUF file's header, reading only as much of the file as the header takes;
    raises NotGGUF, HeaderError (malformed or truncated) or OSError."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        first = handle.read(min(size, FIRST_READ_BYTES))
        return _parse(bytearray(first), size, more=_reader(handle, size))


def parse_header(prefix: bytes, *, file_size: int) -> GGUFHeader:
    """Parse a header from the first bytes of a file of file_size bytes; raises
    IncompleteHeader if the prefix ends before the header does."""
    return _parse(bytearray(prefix[:file_size]), file_size, more=None)


def _reader(handle: BinaryIO, size: int) -> Callable[[bytearray, int], None]:
    def more(buffer: bytearray, needed: int) -> None:
        # Doubling keeps the number of reads small for a 20 MiB tokenizer.
        target = min(size, MAX_HEADER_BYTES, max(needed, 2 * len(buffer)))
        chunk = handle.read(target - len(buffer))
        buffer += chunk
        if len(buffer) < needed:
            raise HeaderError(f"the file ended after {len(buffer)} bytes while it was read")

    return more


class _Cursor:
    """Reads values at offsets of a growing buffer; every read is checked against the file."""

    def __init__(
        self,
        buffer: bytes | bytearray,
        size: int,
        order: str,
        more: Callable[[bytearray, int], None] | None = None,
    ) -> None:
        self.buffer = buffer
        self.size = size
        self.order = order
        self.more = more
        self.u32 = struct.Struct(order + "I")
        self.u64 = struct.Struct(order + "Q")

    def need(self, end: int) -> None:
        """Make sure bytes up to end are in the buffer."""
        if end <= len(self.buffer):
            return
        if end > self.size:
            raise HeaderError(
                f"the header runs past the end of the file (byte {end} of {self.size})"
            )
        if end > MAX_HEADER_BYTES:
            raise HeaderError(f"the header is larger than {MAX_HEADER_BYTES >> 20} MiB")
        if self.more is None or not isinstance(self.buffer, bytearray):
            raise IncompleteHeader(end)
        self.more(self.buffer, end)

    def uint32(self, offset: int) -> int:
        self.need(offset + 4)
        value: int = self.u32.unpack_from(self.buffer, offset)[0]
        return value

    def uint64(self, offset: int) -> int:
        self.need(offset + 8)
        value: int = self.u64.unpack_from(self.buffer, offset)[0]
        return value

    def scalar(self, kind: int, offset: int) -> Any:
        self.need(offset + _SCALAR_SIZES[GGUFValueType(kind)])
        code = self.order + _SCALAR_CODES[GGUFValueType(kind)]
        return struct.unpack_from(code, self.buffer, offset)[0]

    def string_end(self, offset: int, *, limit: int | None = None) -> int:
        length = self.uint64(offset)
        if limit is not None and length > limit:
            raise HeaderError(
                f"a name of {length} bytes at byte {offset} is longer than GGUF allows"
            )
        self.need(offset + 8 + length)
        return offset + 8 + length

    def string(self, offset: int, *, limit: int | None = None) -> str:
        end = self.string_end(offset, limit=limit)
        try:
            return bytes(self.buffer[offset + 8 : end]).decode("utf-8")
        except UnicodeDecodeError as error:
            raise HeaderError(
                f"the string at byte {offset} is not UTF-8 ({error.reason})"
            ) from None

    def value_type(self, offset: int, what: str) -> int:
        kind = self.uint32(offset)
        if kind not in _VALUE_TYPES:
            raise HeaderError(f"{what} has an unknown value type {kind}")
        return kind

    def skip_value(self, kind: int, offset: int, what: str) -> tuple[int, tuple[int, ...], int]:
        """Step over one value: its end, its types (an array's first item's after its own) and
        how many values it holds."""
        if kind == STRING:
            return self.string_end(offset), (STRING,), 1
        if kind != ARRAY:
            end = offset + _SCALAR_SIZES[GGUFValueType(kind)]
            self.need(end)
            return end, (kind,), 1
        return self.skip_array(offset, what, depth=1)

    def skip_array(self, offset: int, what: str, *, depth: int) -> tuple[int, tuple[int, ...], int]:
        if depth > MAX_ARRAY_NESTING:
            raise HeaderError(f"{what} nests arrays deeper than {MAX_ARRAY_NESTING}")
        item = self.value_type(offset, what)
        count = self.uint64(offset + 4)
        start = offset + 12
        least = _SCALAR_SIZES.get(GGUFValueType(item), 8 if item == STRING else 12)
        if count > (self.size - start) // least:
            raise HeaderError(f"{what} claims {count} items, more than the file can hold")
        if count == 0:
            return start, (ARRAY,), 0
        if item == STRING:
            return self._skip_strings(start, count), (ARRAY, STRING), count
        if item != ARRAY:
            end = start + count * least
            self.need(end)
            return end, (ARRAY, item), count
        types: tuple[int, ...] = (ARRAY,)
        position, leaves = start, 0
        for index in range(count):
            position, inner, inner_leaves = self.skip_array(position, what, depth=depth + 1)
            if index == 0:
                types = (ARRAY, *inner)
            leaves += inner_leaves
        return position, types, leaves

    def _skip_strings(self, offset: int, count: int) -> int:
        # The hot loop of a real model's header (every vocabulary entry): locals only.
        unpack, buffer = self.u64.unpack_from, self.buffer
        available = len(buffer)
        for _ in range(count):
            if offset + 8 > available:
                self.need(offset + 8)
                available = len(buffer)
            offset += 8 + unpack(buffer, offset)[0]
        self.need(offset)
        return offset

    def array_leaves(self, offset: int, leaves: list[tuple[int, int]]) -> int:
        """Collect (type, offset) of an array's values, nested arrays flattened; returns its end."""
        item = self.uint32(offset)
        count = self.uint64(offset + 4)
        position = offset + 12
        for _ in range(count):
            if item == ARRAY:
                position = self.array_leaves(position, leaves)
            else:
                leaves.append((item, position))
                position, _, _ = self.skip_value(item, position, "an array")
        return position


def _parse(
    buffer: bytearray, size: int, *, more: Callable[[bytearray, int], None] | None
) -> GGUFHeader:
    if size < 4 or bytes(buffer[:4]) != GGUF_MAGIC:
        if len(buffer) < min(size, 4):
            raise IncompleteHeader(4)
        raise NotGGUF("the file does not start with the GGUF magic")
    cursor, version = _versioned_cursor(buffer, size, more)
    tensor_count, kv_count = cursor.uint64(8), cursor.uint64(16)
    fields: dict[str, HeaderField] = {
        "GGUF.version": HeaderField("GGUF.version", (GGUFValueType.UINT32,), 4, value=version),
        "GGUF.tensor_count": HeaderField(
            "GGUF.tensor_count", (GGUFValueType.UINT64,), 8, value=tensor_count
        ),
        "GGUF.kv_count": HeaderField("GGUF.kv_count", (GGUFValueType.UINT64,), 16, value=kv_count),
    }
    offset = _read_fields(cursor, fields, offset=24, count=kv_count)
    entries, offset = _read_tensor_infos(cursor, offset=offset, count=tensor_count)
    alignment = _alignment(fields)
    data_offset = offset + (-offset % alignment)
    return GGUFHeader(
        version=version,
        byte_order=cursor.order,
        fields=fields,
        tensors=_tensors(entries, data_offset),
        alignment=alignment,
        data_offset=data_offset,
        file_size=size,
        data=bytes(buffer[:offset]),
    )


def _versioned_cursor(
    buffer: bytearray, size: int, more: Callable[[bytearray, int], None] | None
) -> tuple[_Cursor, int]:
    """A cursor in the file's byte order and the GGUF version it gives, refused unless
    supported."""
    cursor = _Cursor(buffer, size, "<", more)
    version = cursor.uint32(4)
    if version & 0xFFFF == 0:
        # Written on a machine of the other byte order (GGUFReader reads these too).
        cursor = _Cursor(buffer, size, ">", more)
        version = cursor.uint32(4)
    if version not in SUPPORTED_VERSIONS:
        raise HeaderError(f"GGUF version {version} is not supported (only 2 and 3 are)")
    return cursor, version


def _read_fields(
    cursor: _Cursor, fields: dict[str, HeaderField], *, offset: int, count: int
) -> int:
    """Read ``count`` key-value pairs from ``offset`` into ``fields``; returns their end."""
    if count > (cursor.size - offset) // _MIN_KV_BYTES:
        raise HeaderError(f"the header claims {count} keys, more than the file can hold")
    for _ in range(count):
        key = cursor.string(offset, limit=MAX_NAME_BYTES)
        offset = cursor.string_end(offset)
        kind = cursor.value_type(offset, f"key {key}")
        offset += 4
        if key in fields:
            raise HeaderError(f"key {key} appears twice")
        end, types, length = cursor.skip_value(kind, offset, f"key {key}")
        value = cursor.scalar(kind, offset) if kind in _SCALAR_CODES else None
        fields[key] = HeaderField(key, types, offset, length, value, end)
        offset = end
    return offset


def _read_tensor_infos(
    cursor: _Cursor, *, offset: int, count: int
) -> tuple[list[tuple[str, tuple[int, ...], int, int]], int]:
    """Read ``count`` tensor infos from ``offset``: (name, dims, type, offset) each, and their
    end."""
    if count > (cursor.size - offset) // _MIN_TENSOR_INFO_BYTES:
        raise HeaderError(f"the header claims {count} tensors, more than the file can hold")
    entries: list[tuple[str, tuple[int, ...], int, int]] = []
    for _ in range(count):
        name = cursor.string(offset, limit=MAX_NAME_BYTES)
        offset = cursor.string_end(offset)
        n_dims = cursor.uint32(offset)
        if n_dims > MAX_DIMS:
            raise HeaderError(f"tensor {name} has {n_dims} dimensions (at most {MAX_DIMS})")
        dims = tuple(cursor.uint64(offset + 4 + 8 * i) for i in range(n_dims))
        offset += 4 + 8 * n_dims
        entries.append((name, dims, cursor.uint32(offset), cursor.uint64(offset + 4)))
        offset += 12
    return entries, offset


def _alignment(fields: dict[str, HeaderField]) -> int:
    found = fields.get("general.alignment")
    if found is None:
        return DEFAULT_ALIGNMENT
    if found.types != (GGUFValueType.UINT32,):
        raise HeaderError("general.alignment is not a uint32")
    alignment = int(found.value)
    if alignment == 0 or alignment & (alignment - 1):
        raise HeaderError(f"general.alignment {alignment} is not a power of two")
    return alignment


def _tensors(
    entries: list[tuple[str, tuple[int, ...], int, int]], data_offset: int
) -> tuple[TensorInfo, ...]:
    tensors, names = [], set()
    for name, dims, raw_type, offset in entries:
        if name in names:
            raise HeaderError(f"tensor {name} appears twice")
        names.add(name)
        try:
            tensor_type = GGMLQuantizationType(raw_type)
        except ValueError:
            raise HeaderError(f"tensor {name} has an unknown type {raw_type}") from None
        block_size, type_size = GGML_QUANT_SIZES[tensor_type]
        row = dims[0] if dims else 1
        if block_size > 1 and row % block_size:
            raise HeaderError(
                f"tensor {name}'s rows of {row} values do not fill {tensor_type.name} blocks "
                f"of {block_size}"
            )
        n_elements = math.prod(dims)
        tensors.append(
            TensorInfo(
                name=name,
                dims=dims,
                tensor_type=int(tensor_type),
                data_offset=data_offset + offset,
                n_elements=n_elements,
                n_bytes=n_elements * type_size // block_size,
            )
        )
    return tuple(tensors)
