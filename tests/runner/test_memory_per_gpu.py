"""The memory check per GPU for a config's split (runner.compatibility): a layer or row split
by its tensor split, split_mode none all on the main GPU, a draft on a GPU of its own wholly
there; a GPU the config names that the hardware lacks is an error of its own."""

from __future__ import annotations

import pytest

from runner.compatibility import (
    estimated_memory_bytes,
    estimated_memory_per_gpu,
    gpu_placement_problems,
    memory_problems,
)
from runner.config import parse_config
from runner.gguf.inspect import ModelInfo

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
