"""The tiny random-weight GGUF models (runner.gguf.tiny_models): small, fast, reproducible."""

import time
from pathlib import Path

import numpy as np
from gguf import GGUFReader

from runner.gguf import tiny_models as fixtures
from runner.gguf.inspect import inspect_model, sha256_file


def test_write_fixtures_writes_every_named_model(tiny_models):
    assert sorted(tiny_models) == sorted(fixtures.FIXTURE_NAMES)
    assert all(path.is_file() and path.name == name for name, path in tiny_models.items())


def test_every_fixture_is_under_two_megabytes(tiny_models):
    assert all(path.stat().st_size < 2_000_000 for path in tiny_models.values())


def test_writing_all_fixtures_is_fast_and_byte_for_byte_reproducible(tiny_models, tmp_path):
    start = time.monotonic()
    again = fixtures.write_fixtures(tmp_path)
    assert time.monotonic() - start < 10
    assert {n: sha256_file(p) for n, p in again.items()} == {
        n: sha256_file(p) for n, p in tiny_models.items()
    }


def test_target_is_a_small_qwen3_with_the_test_tokenizer(tiny_models):
    info = inspect_model(tiny_models["tiny-qwen3.gguf"])
    assert info.architecture == "qwen3"
    assert (info.n_embd, info.block_count, info.vocab_size) == (64, 4, 256)
    reader = GGUFReader(tiny_models["tiny-qwen3.gguf"])
    assert reader.get_field("tokenizer.ggml.model").contents() == "test"


def test_dflash_draft_matches_the_target(tiny_models):
    target = inspect_model(tiny_models["tiny-qwen3.gguf"])
    draft = inspect_model(tiny_models["tiny-dflash.gguf"])
    assert draft.architecture == "dflash"
    assert (draft.n_embd, draft.vocab_size) == (target.n_embd, target.vocab_size)
    assert draft.block_count == 2
    assert draft.dflash_block_size == 16
    assert all(layer < target.block_count for layer in draft.dflash_target_layers)


def test_dflash_draft_has_a_mask_token_and_borrows_embeddings_from_the_target(tiny_models):
    reader = GGUFReader(tiny_models["tiny-dflash.gguf"])
    assert reader.get_field("tokenizer.ggml.mask_token_id").contents() < 256
    names = {t.name for t in reader.tensors}
    assert {"fc.weight", "enc.output_norm.weight", "output_norm.weight"} <= names
    assert "token_embd.weight" not in names


def test_premerge_and_wide_drafts_differ_from_the_good_draft_only_as_intended(tiny_models):
    premerge = inspect_model(tiny_models["tiny-dflash-draft-premerge.gguf"])
    wide = inspect_model(tiny_models["tiny-dflash-wide.gguf"])
    assert (premerge.architecture, premerge.n_embd) == ("dflash-draft", 64)
    assert (wide.architecture, wide.n_embd) == ("dflash", 32)


def test_mtp_target_carries_one_mtp_block_after_its_main_layers(tiny_models):
    info = inspect_model(tiny_models["tiny-mtp.gguf"])
    assert (info.architecture, info.block_count, info.nextn_predict_layers) == ("hy_v3", 3, 1)
    names = {t.name for t in GGUFReader(tiny_models["tiny-mtp.gguf"]).tensors}
    assert {f"blk.2.nextn.{n}.weight" for n in ("eh_proj", "enorm", "hnorm")} <= names


def test_mtp_head_and_lm_head_both_predict_the_next_token_id(tiny_models):
    tensors = {t.name: np.asarray(t.data) for t in GGUFReader(tiny_models["tiny-mtp.gguf"]).tensors}
    embd, head = tensors["token_embd.weight"], tensors["output.weight"]
    eh_proj = tensors["blk.2.nextn.eh_proj.weight"]
    successor = (np.arange(256) + 1) % 256
    assert ((embd @ head.T).argmax(axis=1) == successor).all()
    assert np.array_equal(eh_proj[:, :64], np.eye(64)) and not eh_proj[:, 64:].any()


def test_write_fixtures_creates_a_missing_directory(tmp_path):
    paths = fixtures.write_fixtures(tmp_path / "new" / "dir")
    assert all(isinstance(p, Path) and p.parent == tmp_path / "new" / "dir" for p in paths.values())
