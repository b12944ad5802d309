"""Target/draft pair checks (runner.compatibility), on the tiny models' real metadata."""

import dataclasses
import re

import pytest

from runner.compatibility import (
    check_pair,
    max_dflash_n_max,
    pair_problems,
    speculative_pair_problem,
)
from runner.config import parse_config
from runner.errors import ModelCheckError
from runner.gguf.inspect import inspect_model


@pytest.fixture(scope="module")
def infos(tiny_models):
    return {name.removesuffix(".gguf"): inspect_model(path) for name, path in tiny_models.items()}


def refusal(*, target, draft, spec_types) -> str:
    """The pair's problem; fails the test if the pair is accepted."""
    problem = speculative_pair_problem(target=target, draft=draft, spec_types=spec_types)
    assert problem is not None, "the pair was accepted"
    return problem


def test_a_matching_dflash_pair_passes(infos):
    problem = speculative_pair_problem(
        target=infos["tiny-qwen3"], draft=infos["tiny-dflash"], spec_types=["draft-dflash"]
    )
    assert problem is None


def test_draft_dflash_without_a_draft_is_refused(infos):
    problem = refusal(target=infos["tiny-qwen3"], draft=None, spec_types=["draft-dflash"])
    assert re.search("draft-dflash needs a draft model", problem)


def test_premerge_dflash_draft_is_refused_with_a_hint(infos):
    problem = refusal(
        target=infos["tiny-qwen3"],
        draft=infos["tiny-dflash-draft-premerge"],
        spec_types=["draft-dflash"],
    )
    assert re.search("pre-merge DFlash file .*architecture 'dflash'", problem)


def test_draft_dflash_with_a_non_dflash_draft_is_refused(infos):
    problem = refusal(
        target=infos["tiny-qwen3"], draft=infos["tiny-qwen3"], spec_types=["draft-dflash"]
    )
    assert re.search("architecture 'dflash'.*'qwen3'", problem)


def test_dflash_draft_without_target_layers_is_refused(infos):
    draft = dataclasses.replace(infos["tiny-dflash"], dflash_target_layers=None)
    problem = refusal(target=infos["tiny-qwen3"], draft=draft, spec_types=["draft-dflash"])
    assert re.search("no dflash.target_layers", problem)


def test_dflash_target_layer_beyond_the_target_is_refused(infos):
    draft = dataclasses.replace(infos["tiny-dflash"], dflash_target_layers=[1, 4])
    problem = refusal(target=infos["tiny-qwen3"], draft=draft, spec_types=["draft-dflash"])
    assert re.search("layer 4 is out of range", problem)


def test_dflash_target_layers_count_only_main_layers_of_an_mtp_target(infos):
    draft = dataclasses.replace(infos["tiny-dflash"], dflash_target_layers=[1, 2])
    problem = refusal(target=infos["tiny-mtp"], draft=draft, spec_types=["draft-dflash"])
    assert re.search("only 2 layers", problem)


def test_dflash_hidden_size_mismatch_is_refused(infos):
    problem = refusal(
        target=infos["tiny-qwen3"], draft=infos["tiny-dflash-wide"], spec_types=["draft-dflash"]
    )
    assert re.search("n_embd 32 but target .* has 64", problem)


def test_dflash_vocab_mismatch_is_refused(infos):
    draft = dataclasses.replace(infos["tiny-dflash"], vocab_size=257)
    problem = refusal(target=infos["tiny-qwen3"], draft=draft, spec_types=["draft-dflash"])
    assert re.search("vocabulary of 257 tokens", problem)


def test_draft_simple_allows_the_vocab_slack_llama_cpp_allows(infos):
    target = dataclasses.replace(infos["tiny-qwen3"], vocab_size=151936)
    close = dataclasses.replace(infos["tiny-qwen3"], vocab_size=152064)
    far = dataclasses.replace(infos["tiny-qwen3"], vocab_size=152065)
    assert speculative_pair_problem(target=target, draft=close, spec_types=["draft-simple"]) is None
    problem = refusal(target=target, draft=far, spec_types=["draft-simple"])
    assert re.search("must share a tokenizer", problem)


@pytest.mark.parametrize("spec_type", ["draft-simple", "draft-eagle3"])
def test_draft_model_types_without_a_draft_are_refused(infos, spec_type):
    problem = refusal(target=infos["tiny-qwen3"], draft=None, spec_types=[spec_type])
    assert re.search(f"{spec_type} needs a draft model", problem)


def test_draft_simple_with_the_target_as_its_own_draft_passes(infos):
    problem = speculative_pair_problem(
        target=infos["tiny-qwen3"],
        draft=infos["tiny-qwen3"],
        spec_types=["draft-simple", "ngram-mod"],
    )
    assert problem is None


def test_ngram_types_need_no_draft(infos):
    assert (
        speculative_pair_problem(target=infos["tiny-qwen3"], draft=None, spec_types=["ngram-mod"])
        is None
    )


def test_draft_mtp_on_a_target_without_an_mtp_head_is_refused(infos):
    problem = refusal(target=infos["tiny-qwen3"], draft=None, spec_types=["draft-mtp"])
    assert re.search("no nextn_predict_layers", problem)


def test_draft_mtp_on_the_mtp_target_passes(infos):
    assert (
        speculative_pair_problem(target=infos["tiny-mtp"], draft=None, spec_types=["draft-mtp"])
        is None
    )


def test_max_dflash_n_max_is_block_size_minus_one(infos):
    assert max_dflash_n_max(infos["tiny-dflash"]) == 15
    assert max_dflash_n_max(dataclasses.replace(infos["tiny-dflash"], dflash_block_size=None)) == 15
    assert max_dflash_n_max(dataclasses.replace(infos["tiny-dflash"], dflash_block_size=8)) == 7


DFLASH = {"target_model": "tiny-qwen3.gguf", "draft_model": "d.gguf", "spec_types": "draft-dflash"}


def test_a_good_pair_has_no_problems(infos):
    config = parse_config({**DFLASH, "n_max": 15})
    assert pair_problems(config, infos["tiny-qwen3"], infos["tiny-dflash"]) == {}
    check_pair(config, infos["tiny-qwen3"], infos["tiny-dflash"])


def test_pair_problems_name_the_draft_model_field_when_there_is_a_draft(infos):
    config = parse_config(DFLASH)
    problems = pair_problems(config, infos["tiny-qwen3"], infos["tiny-dflash-wide"])
    assert list(problems) == ["draft_model"]
    assert "n_embd 32" in problems["draft_model"][0]


def test_pair_problems_name_spec_types_when_there_is_no_draft(infos):
    config = parse_config({"target_model": "tiny-qwen3.gguf", "spec_types": "draft-mtp"})
    problems = pair_problems(config, infos["tiny-qwen3"], None)
    assert list(problems) == ["spec_types"]
    assert "no nextn_predict_layers" in problems["spec_types"][0]


def test_n_max_above_a_small_dflash_block_is_a_problem_of_n_max(infos):
    draft = dataclasses.replace(infos["tiny-dflash"], dflash_block_size=8)
    problems = pair_problems(parse_config({**DFLASH, "n_max": 12}), infos["tiny-qwen3"], draft)
    assert problems == {
        "n_max": ["n_max 12 is above this DFlash draft's limit of 7 (its block size minus one)"]
    }


def test_context_above_the_training_context_is_a_problem_of_ctx_size(infos):
    config = parse_config({"target_model": "tiny-qwen3.gguf", "ctx_size": 8192})
    problems = pair_problems(config, infos["tiny-qwen3"], None)
    assert problems == {
        "ctx_size": ["context 8192 is above the target's training context of 4096 tokens"]
    }


def test_check_pair_raises_every_problem_in_one_line(infos):
    draft = dataclasses.replace(infos["tiny-dflash-wide"], dflash_block_size=8)
    config = parse_config({**DFLASH, "n_max": 12, "ctx_size": 8192})
    with pytest.raises(ModelCheckError) as caught:
        check_pair(config, infos["tiny-qwen3"], draft)
    message = str(caught.value)
    assert "\n" not in message
    assert "n_embd 32" in message and "limit of 7" in message and "training context" in message
