"""What a row measured, in words, and which rows share a ranking."""

from __future__ import annotations

from leaderboard.models import Config
from leaderboard.verdicts.workloads import ranking_key, workload_label


def config(protocol: dict, *, variant: str = "v1") -> Config:
    return Config(
        key="k",
        canonical={"protocol": protocol},
        protocol=protocol["name"],
        protocol_variant=variant,
    )


def test_two_quick_configs_on_different_prompts_are_told_apart_by_their_labels():
    one = config({"name": "quick", "n_predict": 64, "prompt": "Write a haiku about the sea."})
    other = config({"name": "quick", "n_predict": 64, "prompt": "a a a a a a a a"}, variant="v2")
    assert workload_label(one) == "quick, 64 out, prompt “Write a haiku about the sea.”"
    assert workload_label(one) != workload_label(other)
    same = {"definition": "decode", "hardware_id": 1, "engine_release": "b11434"}
    assert ranking_key(one, **same) != ranking_key(other, **same)


def test_a_ranking_is_one_definition_one_gpu_and_one_release():
    one = config({"name": "depth", "depths": [512, 4096], "output_tokens": 128})
    assert workload_label(one) == "depth 512–4096 tokens (2 depths), 128 out"
    base = {"definition": "decode", "hardware_id": 1, "engine_release": "b11434"}
    keys = {
        ranking_key(one, **base),
        ranking_key(one, **base | {"definition": "end-to-end"}),
        ranking_key(one, **base | {"hardware_id": 2}),
        ranking_key(one, **base | {"engine_release": "b11500"}),
    }
    assert len(keys) == 4
