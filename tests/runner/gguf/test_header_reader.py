"""runner.gguf.header against gguf.GGUFReader: the same keys, values, tensors and data offset for
every tiny fixture, a big-endian file, nested arrays and the real Gemma 3 270M file; malformed and
hostile headers refused in one line without reading or allocating past the file."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFEndian, GGUFReader, GGUFValueType, GGUFWriter

from runner.errors import ModelCheckError
from runner.gguf import header as gguf_header
from runner.gguf.header import (
    HeaderError,
    IncompleteHeader,
    NotGGUF,
    parse_header,
    read_header,
)
from runner.gguf.inspect import inspect_model, inspect_prefix, marks_test_weights
from runner.gguf.real_model import INSTALL_HINT, place_real_model, real_model_installed
from runner.gguf.tiny_models import FIXTURE_NAMES, TEST_WEIGHTS_KEY
from runner.roofline import weight_bytes_per_token

# The keys whose values hold a whole vocabulary: on the real file they are compared by length
# and a sample, since GGUFReader takes seconds to turn 262k entries into Python objects.
VOCABULARY_KEYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type")


def assert_same_as_gguf_reader(path: Path, *, whole_vocabulary: bool = True) -> None:
    reader = GGUFReader(path)
    header = read_header(path)

    assert list(header.fields) == list(reader.fields)
    for key, field in reader.fields.items():
        ours = header.fields[key]
        assert list(ours.types) == [int(kind) for kind in field.types], key
        assert header.array_len(key) == len(field.data), key
        if whole_vocabulary or key not in VOCABULARY_KEYS:
            assert header.contents(key) == field.contents(), key
        else:
            assert header.contents(key)[:50] == field.contents(slice(0, 50)), key
    assert header.alignment == reader.alignment
    assert header.data_offset == reader.data_offset
    theirs = [
        (t.name, [int(d) for d in t.shape], int(t.tensor_type), t.data_offset, t.n_bytes)
        for t in reader.tensors
    ]
    ours_tensors = [
        (t.name, list(t.dims), t.tensor_type, t.data_offset, t.n_bytes) for t in header.tensors
    ]
    assert ours_tensors == theirs
    assert [t.n_elements for t in header.tensors] == [t.n_elements for t in reader.tensors]
    assert weight_bytes_per_token(header.tensors) == weight_bytes_per_token(reader.tensors)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_header_reader_reads_every_tiny_fixture_as_gguf_reader_does(tiny_models, name):
    assert_same_as_gguf_reader(tiny_models[name])


def write_gguf(
    path: Path,
    endianess: GGUFEndian = GGUFEndian.LITTLE,
    extra: dict[str, tuple[object, GGUFValueType]] | None = None,
) -> Path:
    writer = GGUFWriter(path, "qwen3", endianess=endianess)
    writer.add_name(path.stem)
    writer.add_uint32("qwen3.block_count", 2)
    writer.add_float32("qwen3.rope.freq_base", 1e6 / 3)
    writer.add_float64("some.float64", -2.5)
    writer.add_int8("some.int8", -3)
    writer.add_bool("some.flag", False)
    writer.add_array("tokenizer.ggml.tokens", ["a", "bc", "", "déjà"])
    for key, (value, kind) in (extra or {}).items():
        writer.add_key_value(key, value, kind)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    writer.add_tensor("blk.0.ffn.weight", np.ones((3, 8), np.float16))
    writer.write_header_to_file(path)
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_big_endian_file_reads_as_gguf_reader_reads_it(tmp_path):
    path = write_gguf(tmp_path / "big.gguf", GGUFEndian.BIG)

    assert read_header(path).byte_order == ">"
    assert_same_as_gguf_reader(path)


def test_nested_arrays_are_flattened_as_gguf_reader_flattens_them(tmp_path):
    path = write_gguf(
        tmp_path / "nested.gguf",
        extra={
            "some.nested": ([[1, 2], [3]], GGUFValueType.ARRAY),
            "some.names": ([["x", "y"], ["z"]], GGUFValueType.ARRAY),
        },
    )

    assert read_header(path).contents("some.nested") == [1, 2, 3]
    assert read_header(path).array_len("some.names") == 3
    assert_same_as_gguf_reader(path)


def test_a_value_nobody_asks_for_need_not_be_utf8_but_one_asked_for_must(tmp_path):
    path = write_gguf(tmp_path / "latin1.gguf")
    data = path.read_bytes().replace("déjà".encode(), "d\xe9j\xe0".encode("latin-1") + b"!!")
    path.write_bytes(data)

    header = read_header(path)
    assert header.array_len("tokenizer.ggml.tokens") == 4
    with pytest.raises(HeaderError, match="not UTF-8"):
        header.contents("tokenizer.ggml.tokens")
    assert inspect_model(path).vocab_size == 4


def test_inspect_model_marks_test_weights_from_the_same_read(tiny_models, tmp_path):
    assert all(inspect_model(tiny_models[name]).test_weights for name in FIXTURE_NAMES)
    assert inspect_model(write_gguf(tmp_path / "plain.gguf")).test_weights is False
    old_tiny = write_gguf(
        tmp_path / "old.gguf", extra={"tokenizer.ggml.model": ("test", GGUFValueType.STRING)}
    )
    assert inspect_model(old_tiny).test_weights is True
    unmarked = write_gguf(
        tmp_path / "unmarked.gguf", extra={TEST_WEIGHTS_KEY: (False, GGUFValueType.BOOL)}
    )
    assert inspect_model(unmarked).test_weights is False


def test_a_prefix_is_read_once_it_holds_the_whole_header(tiny_models):
    path = tiny_models["tiny-dflash.gguf"]
    data, whole = path.read_bytes(), inspect_model(path)
    end = read_header(path).data_offset
    tensors_end = max(t.data_offset + t.n_bytes for t in read_header(path).tensors)
    header_end = len(read_header(path).data)

    for cut in (4, 100, header_end // 2, header_end - 1):
        assert inspect_prefix(data[:cut], file_size=len(data), sha256="", path="x") is None
    found = inspect_prefix(data[:header_end], file_size=len(data), sha256=whole.sha256, path="x")
    assert found is not None
    info, data_offset = found
    assert data_offset == end and tensors_end <= len(data)
    assert info.as_dict() | {"path": whole.path} == whole.as_dict()


def test_every_cut_inside_the_header_is_refused_as_truncated(tiny_models, tmp_path):
    data = tiny_models["tiny-qwen3.gguf"].read_bytes()
    header_end = len(read_header(tiny_models["tiny-qwen3.gguf"]).data)
    path = tmp_path / "cut.gguf"
    for cut in range(4, header_end, 7):
        path.write_bytes(data[:cut])
        with pytest.raises(ModelCheckError, match="is truncated or corrupt") as refused:
            inspect_model(path)
        assert "\n" not in str(refused.value)
        with pytest.raises(IncompleteHeader):
            parse_header(data[:cut], file_size=len(data))


def kv(key: str, kind: int, payload: bytes) -> bytes:
    return struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", kind) + payload


def gguf_bytes(*kvs: bytes, kv_count: int | None = None, tensor_count: int = 0) -> bytes:
    count = len(kvs) if kv_count is None else kv_count
    return b"GGUF" + struct.pack("<IQQ", 3, tensor_count, count) + b"".join(kvs)


ARCH = kv("general.architecture", 8, struct.pack("<Q", 5) + b"qwen3")


def test_an_empty_array_and_every_scalar_type_read_as_gguf_reader_reads_them(tmp_path):
    scalars = [
        kv(f"s.{kind}", kind, struct.pack("<" + code, value))
        for kind, code, value in [
            (0, "B", 250),
            (1, "b", -7),
            (2, "H", 65000),
            (3, "h", -300),
            (4, "I", 2**31),
            (5, "i", -(2**30)),
            (6, "f", 0.1),
            (7, "B", 2),
            (10, "Q", 2**63),
            (11, "q", -1),
            (12, "d", 1e-300),
        ]
    ]
    path = tmp_path / "scalars.gguf"
    path.write_bytes(gguf_bytes(ARCH, kv("s.empty", 9, struct.pack("<IQ", 8, 0)), *scalars))

    assert read_header(path).contents("s.empty") == []
    assert read_header(path).contents("s.7") is True  # a bool byte of 2 is true, as for numpy
    assert_same_as_gguf_reader(path)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (gguf_bytes(kv_count=2**63), "claims 9223372036854775808 keys"),
        (gguf_bytes(ARCH, tensor_count=2**40), "claims 1099511627776 tensors"),
        (gguf_bytes(ARCH, kv("big", 8, struct.pack("<Q", 2**62))), "runs past the end"),
        (
            gguf_bytes(ARCH, kv("arr", 9, struct.pack("<IQ", 8, 2**60))),
            "claims 1152921504606846976",
        ),
        (gguf_bytes(ARCH, kv("arr", 9, struct.pack("<IQ", 6, 2**58))), "more than the file"),
        (gguf_bytes(ARCH, kv("odd", 99, b"")), "unknown value type 99"),
        (gguf_bytes(ARCH, ARCH), "appears twice"),
        (gguf_bytes(ARCH, kv("general.alignment", 4, struct.pack("<I", 3))), "power of two"),
        (gguf_bytes(ARCH, kv("general.alignment", 10, struct.pack("<Q", 64))), "not a uint32"),
        (b"GGUF" + struct.pack("<IQQ", 7, 0, 0), "version 7 is not supported"),
        (
            gguf_bytes(ARCH, tensor_count=1)
            + struct.pack("<Q", 1)
            + b"t"
            + struct.pack("<I", 9)
            + b"\0" * 100,
            "9 dimensions",
        ),
        (
            gguf_bytes(ARCH, tensor_count=1)
            + struct.pack("<Q", 1)
            + b"t"
            + struct.pack("<IQIQ", 1, 8, 1234, 0)
            + b"\0" * 64,
            "unknown type 1234",
        ),
        (
            # Q4_K (type 12) packs rows in blocks of 256 values.
            gguf_bytes(ARCH, tensor_count=1)
            + struct.pack("<Q", 1)
            + b"t"
            + struct.pack("<IQIQ", 1, 100, 12, 0)
            + b"\0" * 64,
            "do not fill Q4_K blocks",
        ),
        (
            gguf_bytes(ARCH, tensor_count=2)
            + (struct.pack("<Q", 1) + b"t" + struct.pack("<IQIQ", 1, 8, 0, 0)) * 2
            + b"\0" * 64,
            "tensor t appears twice",
        ),
    ],
)
def test_a_malformed_header_is_refused_in_one_line(tmp_path, content, reason):
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)

    with pytest.raises(ModelCheckError) as refused:
        inspect_model(path)

    message = str(refused.value)
    assert message.startswith(f"{path} is truncated or corrupt: ")
    assert reason in message and "\n" not in message


def test_a_tensor_past_the_end_of_the_file_is_named(tmp_path):
    path = tmp_path / "short.gguf"
    path.write_bytes(
        gguf_bytes(ARCH, tensor_count=1)
        + struct.pack("<Q", 1)
        + b"t"
        + struct.pack("<IQIQ", 1, 1024, 0, 0)
    )

    with pytest.raises(ModelCheckError, match=r"tensor t ends at byte \d+ but the file has"):
        inspect_model(path)


def test_a_header_claiming_more_than_the_bound_is_refused_before_it_is_read(tmp_path):
    # A sparse file larger than the bound whose one string claims most of it: refused at once,
    # not read (256 MiB of zeros) into memory.
    path = tmp_path / "huge.gguf"
    with open(path, "wb") as handle:
        handle.write(gguf_bytes(ARCH, kv("blob", 8, struct.pack("<Q", 300 << 20))))
        handle.truncate(400 << 20)

    started = time.perf_counter()
    with pytest.raises(HeaderError, match="larger than 256 MiB"):
        read_header(path)
    assert time.perf_counter() - started < 1.0


def test_the_file_is_read_in_growing_chunks_only_up_to_its_header(tiny_models, monkeypatch):
    monkeypatch.setattr(gguf_header, "FIRST_READ_BYTES", 64)
    path = tiny_models["tiny-mtp.gguf"]

    header = read_header(path)

    assert len(header.data) < path.stat().st_size
    assert header.contents("general.name") == "tiny-mtp"
    assert marks_test_weights(header)


@pytest.mark.parametrize("content", [b"", b"GG", b"GGML" + b"\0" * 100])
def test_a_file_without_the_magic_is_not_gguf(tmp_path, content):
    path = tmp_path / "x.gguf"
    path.write_bytes(content)
    with pytest.raises(NotGGUF):
        read_header(path)


needs_real_model = pytest.mark.skipif(
    not real_model_installed(), reason=f"the real-model extra is not installed ({INSTALL_HINT})"
)


@pytest.mark.engine
@needs_real_model
def test_the_header_reader_reads_the_real_model_as_gguf_reader_does(tmp_path):
    path = place_real_model(tmp_path)

    started = time.perf_counter()
    header = read_header(path)
    assert time.perf_counter() - started < 2.0
    assert header.array_len("tokenizer.ggml.tokens") == 262144
    assert not marks_test_weights(header)
    assert_same_as_gguf_reader(path, whole_vocabulary=False)


@pytest.mark.parametrize("architecture", ["x" * 65, "qwen3\x00", "qwen 3", "../qwen3"])
def test_a_header_naming_an_impossible_architecture_is_refused(tmp_path, architecture):
    from runner.errors import ModelCheckError
    from runner.gguf.inspect import inspect_model

    path = tmp_path / "hostile.gguf"
    writer = GGUFWriter(path, architecture)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    writer.write_header_to_file(path)
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    with pytest.raises(ModelCheckError, match="architecture"):
        inspect_model(path)


def test_per_layer_head_counts_give_the_kv_cache_size(tmp_path):
    """Head counts may be one per layer (and head_count_kv absent: as many K/V heads)."""
    from runner.gguf.inspect import inspect_model

    path = tmp_path / "per-layer.gguf"
    writer = GGUFWriter(path, "qwen3")
    writer.add_uint32("qwen3.block_count", 2)
    writer.add_uint32("qwen3.embedding_length", 64)
    writer.add_array("qwen3.attention.head_count", [4, 2])
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    writer.write_header_to_file(path)
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    # (4 + 2) K/V heads over the two layers, keys and values of 64 / 4 = 16 elements each.
    assert inspect_model(path).kv_elements_per_token == 6 * 32
