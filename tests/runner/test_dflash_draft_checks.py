"""runner.compatibility's checks of a user's DFlash draft, on crafted files: variants of the tiny
draft with one key or tensor changed, each refused with a line naming the GGUF field, and the
good draft (with or without the optional attn_v) accepted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFWriter

from runner.compatibility import check_pair, dflash_draft_problem, speculative_pair_problem
from runner.config import parse_config
from runner.errors import ModelCheckError
from runner.gguf.inspect import MAX_DRAFT_TENSORS, ModelInfo, inspect_model
from tests.support.gguf_files import write_dflash_variants


@pytest.fixture(scope="module")
def variants(tiny_models, tmp_path_factory) -> dict[str, Path]:
    """The tiny draft with one thing changed, by what was changed, and the tiny target."""
    folder = tmp_path_factory.mktemp("dflash-variants")
    files = write_dflash_variants(tiny_models["tiny-dflash.gguf"], folder)
    return files | {"target": tiny_models["tiny-qwen3.gguf"]}


def info(variants, name: str) -> ModelInfo:
    return inspect_model(variants[name])


def dflash_refusal(variants, name: str) -> str:
    problem = speculative_pair_problem(
        target=info(variants, "target"), draft=info(variants, name), spec_types=["draft-dflash"]
    )
    assert problem is not None, f"{name} was accepted"
    return problem


@pytest.mark.parametrize(
    ("variant", "says"),
    [
        (
            "mask-out-of-range",
            "tokenizer.ggml.mask_token_id 256, outside its vocabulary of 256 tokens (ids 0 to 255)",
        ),
        ("no-mask", "has no tokenizer.ggml.mask_token_id key"),
        ("block-size-1", "dflash.block_size 1: a block holds the last token and at least one"),
        (
            "fc-one-layer-wide",
            "tensor fc.weight of shape {64, 64}, but llama.cpp expects {128, 64} "
            "(len(dflash.target_layers) x n_embd, n_embd)",
        ),
        ("no-ffn-down", "has no tensor blk.1.ffn_down.weight, which llama.cpp loads"),
        ("no-enc-norm", "has no tensor enc.output_norm.weight"),
        ("blocks-beyond-tensors", "has no tensor blk.2.attn_norm.weight"),
        (
            "ffn-widths-disagree",
            "blk.0.ffn_gate.weight and blk.0.ffn_down.weight of widths 128 and 96",
        ),
    ],
)
def test_a_broken_draft_is_refused_alone_and_with_its_target(variants, variant, says):
    alone = dflash_draft_problem(info(variants, variant))
    assert alone is not None and says in alone
    assert says in dflash_refusal(variants, variant)


def test_the_good_draft_passes_alone_and_without_the_optional_attn_v(variants, tiny_models):
    assert dflash_draft_problem(inspect_model(tiny_models["tiny-dflash.gguf"])) is None
    assert dflash_draft_problem(info(variants, "no-attn-v")) is None
    problem = speculative_pair_problem(
        target=info(variants, "target"),
        draft=info(variants, "no-attn-v"),
        spec_types=["draft-dflash"],
    )
    assert problem is None


def test_a_draft_with_other_token_texts_is_refused_as_llama_cpp_would(variants):
    problem = dflash_refusal(variants, "other-tokens")
    assert "as many tokens as target" in problem and "tokenizer.ggml.tokens" in problem


def test_token_texts_llama_cpp_does_not_compare_may_differ(variants):
    # llama.cpp compares from token 5 on: the first special tokens may be named differently.
    draft = info(variants, "specials-differ")
    assert draft.vocab_digest == info(variants, "target").vocab_digest
    problem = speculative_pair_problem(
        target=info(variants, "target"), draft=draft, spec_types=["draft-dflash"]
    )
    assert problem is None


def test_the_runner_refuses_a_broken_draft_before_it_starts_a_server(variants):
    config = parse_config(
        {"target_model": "t.gguf", "draft_model": "d.gguf", "spec_types": "draft-dflash"}
    )
    with pytest.raises(ModelCheckError, match=r"tokenizer\.ggml\.mask_token_id 256"):
        check_pair(config, info(variants, "target"), info(variants, "mask-out-of-range"))


def test_a_mask_token_outside_the_targets_vocabulary_is_refused(variants):
    # A draft of one vocabulary whose target has none recorded is checked on its own mask.
    target = info(variants, "target")
    draft = info(variants, "no-attn-v")
    smaller = ModelInfo(**(target.as_dict() | {"vocab_size": None}))
    assert (
        speculative_pair_problem(target=smaller, draft=draft, spec_types=["draft-dflash"]) is None
    )
    narrow = ModelInfo(**(draft.as_dict() | {"mask_token_id": 300, "vocab_size": None}))
    problem = speculative_pair_problem(target=target, draft=narrow, spec_types=["draft-dflash"])
    assert problem is not None
    assert "mask_token_id 300, outside target" in problem and "256 tokens" in problem


def test_a_draft_reading_a_layer_its_target_lacks_is_refused_only_with_that_target(variants):
    draft = info(variants, "layer-beyond-target")
    assert dflash_draft_problem(draft) is None
    problem = dflash_refusal(variants, "layer-beyond-target")
    assert "reads target layers [1, 4] (dflash.target_layers)" in problem
    assert "has only 4 layers (layer 4 is out of range)" in problem


@pytest.mark.parametrize(
    ("variant", "says"),
    [
        ("mask-not-a-number", "has tokenizer.ggml.mask_token_id '<mask>', which is not a whole"),
        ("layers-not-numbers", "has dflash.target_layers ['1', '3'], which is not an array of"),
        ("blocks-beyond-llama-cpp", "has dflash.block_count 1000000000; llama.cpp loads at most"),
    ],
)
def test_a_key_llama_cpp_cannot_read_is_named_when_the_file_is_read(variants, variant, says):
    with pytest.raises(ModelCheckError) as refused:
        inspect_model(variants[variant])
    assert says in str(refused.value) and "truncated" not in str(refused.value)


def test_a_dflash_file_with_more_tensors_than_a_draft_has_is_refused(tmp_path):
    writer = GGUFWriter(tmp_path / "many.gguf", "dflash")
    for index in range(MAX_DRAFT_TENSORS + 1):
        writer.add_tensor(f"t.{index}", np.zeros(1, np.float32))
    writer.write_header_to_file(tmp_path / "many.gguf")
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    with pytest.raises(ModelCheckError, match=r"has 4097 tensors: a DFlash draft has a few dozen"):
        inspect_model(tmp_path / "many.gguf")
