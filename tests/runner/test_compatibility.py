"""runner.compatibility: target/draft pair checks, on the tiny models' real metadata, the memory
estimate (the weights and every slot's K/V cache), and the memory check per GPU for a config's split (a layer or row split by its tensor split, split_mode
none all on the main GPU, a draft on a GPU of its own wholly there; a GPU the config names that
the hardware lacks is an error of its own)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from runner.compatibility import (
    check_pair,
    estimated_memory_bytes,
    estimated_memory_per_gpu,
    gpu_placement_problems,
    max_dflash_n_max,
    memory_problems,
    pair_problems,
    speculative_pair_problem,
)
from runner.config import BenchmarkConfig, parse_config
from runner.errors import ModelCheckError
from runner.gguf.inspect import ModelInfo, inspect_model
from runner.gguf.tiny_models import HEAD_DIM, N_HEAD_KV, TARGET_LAYERS


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


# The memory check per GPU for a config's split ------------------------------------------------


GIB = 2**30


RTX_3090 = 24 * GIB


TWO_3090S = [RTX_3090, RTX_3090]


def model(path: str, *, size_gib: float, kv_elements: int, architecture: str) -> ModelInfo:
    return ModelInfo(
        path=path,
        sha256="0" * 64,
        size_bytes=int(size_gib * GIB),
        architecture=architecture,
        file_type=None,
        n_embd=5120,
        block_count=64,
        vocab_size=151936,
        context_length=40960,
        name=None,
        dflash_target_layers=[1, 16, 31, 46, 61] if architecture == "dflash" else None,
        dflash_block_size=16 if architecture == "dflash" else None,
        nextn_predict_layers=None,
        kv_elements_per_token=kv_elements,
    )


# A 27B target at Q8 (28 GiB) and its DFlash draft (1 GiB): the usual two-3090 rig's pair. At
# f16, 131,072 K/V elements a token are 256 KiB: 8,192 tokens of context are 2 GiB.
TARGET = model("qwen3-27b-q8_0.gguf", size_gib=28, kv_elements=131_072, architecture="qwen3")


DRAFT = model("dflash.gguf", size_gib=1, kv_elements=16_384, architecture="dflash")


PAIR = {
    "target_model": TARGET.path,
    "draft_model": DRAFT.path,
    "spec_types": "draft-dflash",
    "n_max": 12,
    "ctx_size": 8192,
}


def per_gpu(**placement) -> list[float]:
    config = parse_config(PAIR | placement)
    needed = estimated_memory_per_gpu(config, TARGET, DRAFT, gpu_memory=TWO_3090S)
    assert needed is not None
    return [amount / GIB for amount in needed]


def problems(**placement) -> dict[str, list[str]]:
    config = parse_config(PAIR | placement)
    return memory_problems(config, TARGET, DRAFT, memory_bytes=RTX_3090, gpu_memory=TWO_3090S)


def test_what_one_3090_cannot_hold_fits_two_by_the_default_layer_split():
    config = parse_config(PAIR)
    alone = memory_problems(config, TARGET, DRAFT, memory_bytes=RTX_3090, gpu_memory=[RTX_3090])
    assert "above the 24.0 GiB this hardware has" in alone["ctx_size"][0]
    # Weights 29 GiB and K/V 2.25 GiB, halved by the GPUs' equal memory.
    assert per_gpu() == pytest.approx([15.625, 15.625])
    assert problems() == {}


def test_the_shares_on_every_gpu_add_up_to_the_whole_estimate():
    config = parse_config(PAIR)
    whole = estimated_memory_bytes(config, TARGET, DRAFT)
    for placement in ({}, {"tensor_split": [3, 1]}, {"split_mode": "row"}, {"draft_gpu": 1}):
        assert sum(per_gpu(**placement)) * GIB == pytest.approx(whole, abs=4)


def test_split_mode_none_puts_everything_on_the_main_gpu_and_is_refused_there():
    assert per_gpu(split_mode="none") == pytest.approx([31.25, 0])
    assert per_gpu(split_mode="none", main_gpu=1) == pytest.approx([0, 31.25])
    (message,) = problems(split_mode="none")["split_mode"]
    assert "GPU 0 needs at least 31.2 GiB of its 24.0 GiB" in message
    assert "GPU 1" not in message


def test_a_tensor_split_places_the_layers_by_its_proportions():
    assert per_gpu(tensor_split=[3, 1]) == pytest.approx([31.25 * 3 / 4, 31.25 / 4])
    assert problems(tensor_split=[3, 1]) == {}
    (message,) = problems(tensor_split=[5, 1])["tensor_split"]
    assert "tensor split 5,1" in message and "GPU 0 needs at least 26.0 GiB" in message


def test_a_row_split_keeps_the_kv_cache_on_the_main_gpu():
    # Weights 29 GiB halved; the target's 2 GiB and the draft's 0.25 GiB of K/V on the main GPU.
    assert per_gpu(split_mode="row") == pytest.approx([14.5 + 2.25, 14.5])
    assert per_gpu(split_mode="row", main_gpu=1) == pytest.approx([14.5, 14.5 + 2.25])


def test_a_draft_on_its_own_gpu_is_wholly_there():
    # The target halves its 30 GiB; the draft's 1.25 GiB (weights and K/V) all on GPU 1.
    assert per_gpu(draft_gpu=1) == pytest.approx([15.0, 15.0 + 1.25])
    assert per_gpu(split_mode="none", draft_gpu=1) == pytest.approx([30.0, 1.25])


@pytest.mark.parametrize(
    ("placement", "field"),
    [
        ({"tensor_split": [1, 1, 1]}, "tensor_split"),
        ({"split_mode": "none", "main_gpu": 2}, "main_gpu"),
        ({"draft_gpu": 2}, "draft_gpu"),
    ],
)
def test_a_gpu_the_hardware_lacks_is_named_by_its_field(placement, field):
    found = problems(**placement)
    assert list(found) == [field]
    assert "this hardware has 2 GPUs" in found[field][0]
    assert (
        estimated_memory_per_gpu(
            parse_config(PAIR | placement), TARGET, DRAFT, gpu_memory=TWO_3090S
        )
        is None
    )


def test_one_gpu_hardware_refuses_any_second_gpu_and_keeps_split_mode_none():
    config = parse_config(PAIR | {"split_mode": "none", "ctx_size": 2048})
    small_target = model(
        "qwen3-8b-q8_0.gguf", size_gib=8, kv_elements=131_072, architecture="qwen3"
    )
    assert (
        memory_problems(config, small_target, DRAFT, memory_bytes=RTX_3090, gpu_memory=[RTX_3090])
        == {}
    )
    assert (
        "this hardware has 1 GPU"
        in gpu_placement_problems(parse_config(PAIR | {"draft_gpu": 1}), gpu_count=1)["draft_gpu"][
            0
        ]
    )


def concurrency(levels: list[int], **extra) -> dict:
    return {
        "target_model": "tiny-qwen3.gguf",
        "protocol": {
            "name": "concurrency",
            "levels": levels,
            "input_tokens": 512,
            "output_tokens": 256,
        },
    } | extra


def test_the_estimate_is_the_weights_and_every_slots_kv_cache(tiny_models):
    target = inspect_model(tiny_models["tiny-qwen3.gguf"])
    # The tiny qwen3: its layers x its K/V heads x (key + value length) per token of context.
    assert target.kv_elements_per_token == TARGET_LAYERS * N_HEAD_KV * 2 * HEAD_DIM
    config = BenchmarkConfig.model_validate(concurrency([1, 2, 4]))
    quantized = BenchmarkConfig.model_validate(
        concurrency([1, 2, 4], cache_type_k="q8_0", cache_type_v="q8_0")
    )

    tokens = (512 + 256 + 16) * 4
    assert (
        estimated_memory_bytes(config, target, None)
        == target.size_bytes + target.kv_elements_per_token * tokens * 2
    )
    assert estimated_memory_bytes(quantized, target, None) == int(
        target.size_bytes + target.kv_elements_per_token * tokens * 34 / 32
    )
    assert memory_problems(config, target, None, memory_bytes=None) == {}
