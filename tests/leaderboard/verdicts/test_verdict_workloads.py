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


def test_suite_prompts_and_token_ids_under_load_never_share_a_ranking():
    from leaderboard.services.configs import protocol_variant
    from runner.config import parse_config

    def concurrency(**options) -> Config:
        parsed = parse_config(
            {"target_model": "t.gguf", "protocol": {"name": "concurrency", **options}}
        )
        protocol = parsed.canonical()["protocol"]
        return config(protocol, variant=protocol_variant(protocol))

    ids, suite = concurrency(), concurrency(prompts="suite")
    assert workload_label(ids) == "concurrency 1–16 (5 levels), 512 in, 256 out"
    assert workload_label(suite) == (
        "concurrency 1–16 (5 levels), suite 2 prompts of at most 512 tokens, 256 out"
    )
    same = {"definition": "aggregate", "hardware_id": 1, "engine_release": "b11434"}
    assert ranking_key(ids, **same) != ranking_key(suite, **same)
    # How many rounds or which seed stays out of the workload, the prompt source does not.
    assert ranking_key(concurrency(prompts="suite", rounds=2), **same) == ranking_key(suite, **same)


def test_a_categories_workload_names_its_suite_after_the_first():
    first = config({"name": "categories", "categories": ["code", "math"], "output_tokens": 64,
                    "prompts_per_category": 5})  # fmt: skip
    second = config({"name": "categories", "suite": "2", "categories": ["code", "math"],
                     "output_tokens": 64, "prompts_per_category": 5}, variant="v2")  # fmt: skip
    assert workload_label(first) == "categories code, math (2), 64 out, 5 prompts each"
    assert workload_label(second) == "categories code, math (2), suite 2, 64 out, 5 prompts each"
