import dataclasses

import pytest

from runner.errors import ModelCheckError
from runner.gguf_inspect import (
    ModelInfo,
    check_speculative_pair,
    inspect_model,
    max_dflash_n_max,
    sha256_file,
)


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


def test_a_matching_dflash_pair_passes(infos):
    check_speculative_pair(
        target=infos["tiny-qwen3"], draft=infos["tiny-dflash"], spec_types=["draft-dflash"]
    )


def test_draft_dflash_without_a_draft_is_refused(infos):
    with pytest.raises(ModelCheckError, match="draft-dflash needs a draft model"):
        check_speculative_pair(target=infos["tiny-qwen3"], draft=None, spec_types=["draft-dflash"])


def test_premerge_dflash_draft_is_refused_with_a_hint(infos):
    with pytest.raises(ModelCheckError, match="pre-merge DFlash file .*architecture 'dflash'"):
        check_speculative_pair(
            target=infos["tiny-qwen3"],
            draft=infos["tiny-dflash-draft-premerge"],
            spec_types=["draft-dflash"],
        )


def test_draft_dflash_with_a_non_dflash_draft_is_refused(infos):
    with pytest.raises(ModelCheckError, match="architecture 'dflash'.*'qwen3'"):
        check_speculative_pair(
            target=infos["tiny-qwen3"], draft=infos["tiny-qwen3"], spec_types=["draft-dflash"]
        )


def test_dflash_draft_without_target_layers_is_refused(infos):
    draft = dataclasses.replace(infos["tiny-dflash"], dflash_target_layers=None)
    with pytest.raises(ModelCheckError, match="no dflash.target_layers"):
        check_speculative_pair(target=infos["tiny-qwen3"], draft=draft, spec_types=["draft-dflash"])


def test_dflash_target_layer_beyond_the_target_is_refused(infos):
    draft = dataclasses.replace(infos["tiny-dflash"], dflash_target_layers=[1, 4])
    with pytest.raises(ModelCheckError, match="layer 4 is out of range"):
        check_speculative_pair(target=infos["tiny-qwen3"], draft=draft, spec_types=["draft-dflash"])


def test_dflash_target_layers_count_only_main_layers_of_an_mtp_target(infos):
    draft = dataclasses.replace(infos["tiny-dflash"], dflash_target_layers=[1, 2])
    with pytest.raises(ModelCheckError, match="only 2 layers"):
        check_speculative_pair(target=infos["tiny-mtp"], draft=draft, spec_types=["draft-dflash"])


def test_dflash_hidden_size_mismatch_is_refused(infos):
    with pytest.raises(ModelCheckError, match="n_embd 32 but target .* has 64"):
        check_speculative_pair(
            target=infos["tiny-qwen3"], draft=infos["tiny-dflash-wide"], spec_types=["draft-dflash"]
        )


def test_dflash_vocab_mismatch_is_refused(infos):
    draft = dataclasses.replace(infos["tiny-dflash"], vocab_size=257)
    with pytest.raises(ModelCheckError, match="vocabulary of 257 tokens"):
        check_speculative_pair(target=infos["tiny-qwen3"], draft=draft, spec_types=["draft-dflash"])


def test_draft_simple_allows_the_vocab_slack_llama_cpp_allows(infos):
    target = dataclasses.replace(infos["tiny-qwen3"], vocab_size=151936)
    close = dataclasses.replace(infos["tiny-qwen3"], vocab_size=152064)
    far = dataclasses.replace(infos["tiny-qwen3"], vocab_size=152065)
    check_speculative_pair(target=target, draft=close, spec_types=["draft-simple"])
    with pytest.raises(ModelCheckError, match="must share a tokenizer"):
        check_speculative_pair(target=target, draft=far, spec_types=["draft-simple"])


@pytest.mark.parametrize("spec_type", ["draft-simple", "draft-eagle3"])
def test_draft_model_types_without_a_draft_are_refused(infos, spec_type):
    with pytest.raises(ModelCheckError, match=f"{spec_type} needs a draft model"):
        check_speculative_pair(target=infos["tiny-qwen3"], draft=None, spec_types=[spec_type])


def test_draft_simple_with_the_target_as_its_own_draft_passes(infos):
    check_speculative_pair(
        target=infos["tiny-qwen3"],
        draft=infos["tiny-qwen3"],
        spec_types=["draft-simple", "ngram-mod"],
    )


def test_ngram_types_need_no_draft(infos):
    check_speculative_pair(target=infos["tiny-qwen3"], draft=None, spec_types=["ngram-mod"])


def test_draft_mtp_on_a_target_without_an_mtp_head_is_refused(infos):
    with pytest.raises(ModelCheckError, match="no nextn_predict_layers"):
        check_speculative_pair(target=infos["tiny-qwen3"], draft=None, spec_types=["draft-mtp"])


def test_draft_mtp_on_the_mtp_target_passes(infos):
    check_speculative_pair(target=infos["tiny-mtp"], draft=None, spec_types=["draft-mtp"])


def test_max_dflash_n_max_is_block_size_minus_one(infos):
    assert max_dflash_n_max(infos["tiny-dflash"]) == 15
    assert max_dflash_n_max(dataclasses.replace(infos["tiny-dflash"], dflash_block_size=None)) == 15
    assert max_dflash_n_max(dataclasses.replace(infos["tiny-dflash"], dflash_block_size=8)) == 7
