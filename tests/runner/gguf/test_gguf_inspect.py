"""Reading GGUF metadata: what inspect_model finds, and how it refuses bad files."""

import dataclasses

import pytest

from runner.errors import ModelCheckError
from runner.gguf.inspect import ModelInfo, inspect_model, sha256_file


@pytest.fixture(scope="module")
def infos(tiny_models):
    return {name.removesuffix(".gguf"): inspect_model(path) for name, path in tiny_models.items()}


def test_inspect_model_reads_the_target_metadata(infos, tiny_models):
    info = infos["tiny-qwen3"]
    assert info.path == str(tiny_models["tiny-qwen3.gguf"])
    assert info.size_bytes == tiny_models["tiny-qwen3.gguf"].stat().st_size
    assert info.architecture == "qwen3"
    assert info.file_type == "F32"
    assert (info.n_embd, info.block_count, info.vocab_size) == (64, 4, 256)
    assert info.context_length == 4096
    assert info.name == "tiny-qwen3"
    assert info.dflash_target_layers is info.dflash_block_size is info.nextn_predict_layers is None


def test_inspect_model_reads_dflash_and_mtp_keys(infos):
    assert infos["tiny-dflash"].dflash_target_layers == [1, 3]
    assert infos["tiny-dflash"].dflash_block_size == 16
    assert infos["tiny-mtp"].nextn_predict_layers == 1


def test_sha256_matches_hashlib_and_is_stable(tiny_models):
    import hashlib

    path = tiny_models["tiny-dflash.gguf"]
    assert sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert inspect_model(path).sha256 == sha256_file(path)


def test_sha256_cache_notices_a_rewritten_file(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"one")
    first = sha256_file(path)
    path.write_bytes(b"two!")
    assert sha256_file(path) != first


def test_as_dict_is_plain_json_data(infos):
    import json

    data = infos["tiny-dflash"].as_dict()
    assert json.loads(json.dumps(data)) == data
    assert set(data) == {f.name for f in dataclasses.fields(ModelInfo)}


def test_missing_file_is_reported_in_one_line(tmp_path):
    with pytest.raises(ModelCheckError, match=r"^model file not found: .*nope\.gguf$"):
        inspect_model(tmp_path / "nope.gguf")


@pytest.mark.parametrize("content", [b"", b"GGU", b"not a model at all"])
def test_non_gguf_file_is_reported_as_bad_magic(tmp_path, content):
    path = tmp_path / "x.gguf"
    path.write_bytes(content)
    with pytest.raises(ModelCheckError, match=r"is not a GGUF file \(bad magic\)$"):
        inspect_model(path)


@pytest.mark.parametrize("fraction", [0.5, 0.01, 0.99])
def test_truncated_file_is_reported_as_truncated(tmp_path, tiny_models, fraction):
    data = tiny_models["tiny-qwen3.gguf"].read_bytes()
    path = tmp_path / "cut.gguf"
    path.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(ModelCheckError, match="is truncated or corrupt") as excinfo:
        inspect_model(path)
    assert "\n" not in str(excinfo.value)


def test_a_file_missing_only_its_last_byte_is_reported_as_truncated(tmp_path, tiny_models):
    data = tiny_models["tiny-qwen3.gguf"].read_bytes()
    path = tmp_path / "cut.gguf"
    path.write_bytes(data[:-1])
    with pytest.raises(ModelCheckError, match="truncated or corrupt"):
        inspect_model(path)
