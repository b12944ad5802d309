import pytest
from pydantic import ValidationError

from runner.config import BenchmarkConfig, field_errors, parse_config
from runner.errors import ConfigError

DFLASH = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": "draft-dflash,ngram-mod",
    "n_max": 15,
}


def errors_of(data: dict) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        BenchmarkConfig.model_validate(data)
    return field_errors(caught.value)


def test_spec_types_accept_a_comma_separated_combination_in_any_order():
    first = parse_config(DFLASH)
    second = parse_config({**DFLASH, "spec_types": ["ngram-mod", "draft-dflash"]})
    assert first.spec_types == ["draft-dflash", "ngram-mod"]
    assert first.key == second.key


def test_key_is_stable_and_changes_with_what_the_engine_runs():
    config = parse_config(DFLASH)
    assert config.key == parse_config(dict(DFLASH)).key
    assert len(config.key) == 16
    assert parse_config({**DFLASH, "n_max": 12}).key != config.key


def test_defaults_follow_the_seed_leaderboard_protocol():
    config = parse_config({"target_model": "tiny-qwen3.gguf"})
    assert config.protocol.name == "quick"
    assert (config.protocol.runs, config.protocol.n_predict, config.protocol.seed) == (
        10,
        1500,
        1234,
    )
    assert config.effective_ctx_size == 3000


def test_context_sweep_defaults_follow_the_seed_sweep():
    config = parse_config({"target_model": "t.gguf", "protocol": {"name": "context-sweep"}})
    points = [
        (p.input_tokens, p.output_tokens, p.requests, p.warmup) for p in config.protocol.points
    ]
    assert points == [
        (512, 512, 30, 2),
        (4096, 4096, 10, 2),
        (12288, 12288, 5, 1),
        (36864, 36864, 3, 1),
    ]
    assert config.protocol.seed == 42
    assert config.effective_ctx_size >= 36864 * 2


def test_dflash_n_max_above_15_is_a_field_error_not_a_silent_clamp():
    errors = errors_of({**DFLASH, "n_max": 16})
    assert "n_max" in errors
    assert "between 1 and 15" in errors["n_max"][0]


def test_dflash_without_a_draft_model_is_refused():
    errors = errors_of({"target_model": "t.gguf", "spec_types": "draft-dflash"})
    assert "draft_model" in errors


def test_draft_model_without_a_draft_type_is_refused():
    assert "draft_model" in errors_of({"target_model": "t.gguf", "draft_model": "d.gguf"})


def test_unknown_spec_type_names_the_known_ones():
    errors = errors_of({"target_model": "t.gguf", "spec_types": "draft-magic"})
    assert "unknown speculative type 'draft-magic'" in errors["spec_types"][0]


def test_two_model_based_types_cannot_be_combined():
    errors = errors_of(
        {"target_model": "t.gguf", "draft_model": "d.gguf", "spec_types": "draft-dflash,draft-mtp"}
    )
    assert "spec_types" in errors


@pytest.mark.parametrize(
    "reference",
    [
        "../secret.gguf",
        "/etc/passwd.gguf",
        "model.bin",
        "a;rm -rf /.gguf",
        "$(id).gguf",
        "x\n.gguf",
    ],
)
def test_model_references_with_traversal_or_shell_characters_are_refused(reference):
    assert "target_model" in errors_of({"target_model": reference})


def test_huge_context_is_refused():
    assert "ctx_size" in errors_of({"target_model": "t.gguf", "ctx_size": 10_000_000})


def test_context_smaller_than_the_protocol_needs_is_refused():
    errors = errors_of({"target_model": "t.gguf", "ctx_size": 1000})
    assert "too small" in errors["ctx_size"][0]


def test_synthetic_acceptance_needs_a_drafting_type():
    assert "spec_synth_len" in errors_of({"target_model": "t.gguf", "spec_synth_len": 6})


def test_unknown_fields_are_refused():
    assert "colour" in errors_of({"target_model": "t.gguf", "colour": "blue"})


def test_parse_config_raises_one_readable_line():
    with pytest.raises(ConfigError) as caught:
        parse_config({**DFLASH, "n_max": 99})
    assert str(caught.value).startswith("invalid config: n_max:")
    assert "\n" not in str(caught.value)


def test_baseline_keeps_target_context_and_protocol_and_drops_speculation():
    config = parse_config({**DFLASH, "spec_synth_len": 6, "threads": 2})
    baseline = config.baseline()
    assert baseline.spec_types == [] and baseline.draft_model is None
    assert baseline.spec_synth_len is None and not baseline.is_synthetic
    assert (baseline.target_model, baseline.threads) == (config.target_model, 2)
    assert baseline.effective_ctx_size == config.effective_ctx_size
    assert baseline.protocol == config.protocol


def test_synthetic_length_above_n_max_plus_one_is_refused_up_front():
    errors = errors_of({**DFLASH, "spec_types": "draft-dflash", "n_max": 2, "spec_synth_len": 7.3})
    assert "above n_max + 1 = 3" in errors["spec_synth_len"][0]


def test_synthetic_rates_need_one_rate_per_draft_position():
    errors = errors_of({**DFLASH, "n_max": 2, "spec_synth_rates": [0.9, 0.8, 0.7]})
    assert "exactly n_max = 2 rates" in errors["spec_synth_rates"][0]
    assert parse_config({**DFLASH, "n_max": 2, "spec_synth_rates": [0.9, 0.8]}).is_synthetic


def test_draft_gpu_sampling_changes_the_key_only_when_it_is_set():
    base = {
        "target_model": "t.gguf",
        "draft_model": "d.gguf",
        "spec_types": ["draft-simple"],
        "n_max": 4,
    }
    unset = parse_config(base)
    off = parse_config(base | {"draft_backend_sampling": False})
    assert "draft_backend_sampling" not in unset.canonical()
    assert off.canonical()["draft_backend_sampling"] is False and off.key != unset.key
    # A baseline never carries it, and it needs a speculative type.
    assert "draft_backend_sampling" not in off.baseline().canonical()
    with pytest.raises(ConfigError, match="draft's GPU options need a speculative type"):
        parse_config({"target_model": "t.gguf", "draft_backend_sampling": False})


def test_a_canonical_config_of_a_short_protocol_parses_back_to_the_same_key():
    config = parse_config(
        {
            "target_model": "t.gguf",
            "protocol": {"name": "depth", "depths": [32], "output_tokens": 16, "requests": 1},
        }
    )
    assert config.canonical()["ctx_size"] < 256  # the derived context, below MIN_CONTEXT
    assert BenchmarkConfig.from_canonical(config.canonical()).key == config.key
    explicit = parse_config({**config.canonical(), "ctx_size": 4096})
    assert BenchmarkConfig.from_canonical(explicit.canonical()).ctx_size == 4096
    baseline = parse_config({**DFLASH, "ctx_size": 8192}).baseline()
    assert BenchmarkConfig.from_canonical(baseline.canonical()).key == baseline.key


def test_a_prompt_with_a_nul_character_is_refused():
    errors = errors_of(
        {"target_model": "t.gguf", "protocol": {"name": "quick", "prompt": "a\x00b"}}
    )
    assert errors == {"protocol.quick.prompt": ["must not contain a NUL character"]}


@pytest.mark.parametrize(
    "change",
    [
        {"n_max": True},
        {"n_max": "12"},
        {"n_max": 12.0},
        {"ctx_size": False},
        {"backend_sampling": 1},
        {"stream": "yes"},
        {"protocol": {"name": "quick", "runs": True}},
        {"protocol": {"name": "depth", "depths": [512, True]}},
    ],
)
def test_numbers_and_flags_must_be_json_numbers_and_booleans_not_look_alikes(change):
    base = {"target_model": "t.gguf", "draft_model": "d.gguf", "spec_types": ["draft-simple"]}
    with pytest.raises(ValidationError):
        BenchmarkConfig.model_validate(base | change)
    assert BenchmarkConfig.model_validate(base | {"n_max": 12}).n_max == 12


# Several GPUs: llama-server's --split-mode, --tensor-split, --main-gpu, --spec-draft-device.

DFLASH_DEPTHS = {
    "target_model": "qwen3-8b.gguf",
    "draft_model": "dflash.gguf",
    "spec_types": "draft-dflash",
    "n_max": 12,
    "protocol": {"name": "depth", "depths": [512, 4096]},
}
# The keys these configs had before the multi-GPU options existed (computed on commit 865bdf7).
KEYS_BEFORE_THE_OPTIONS = {
    "quick baseline": ({"target_model": "tiny-qwen3.gguf"}, "1ab2a9e718119451", "1ab2a9e718119451"),
    "dflash depths": (DFLASH_DEPTHS, "34390cea9ed02f7e", "72fea05b43332846"),
}


@pytest.mark.parametrize("name", sorted(KEYS_BEFORE_THE_OPTIONS))
def test_a_single_gpu_config_at_the_default_split_keeps_the_key_it_had(name):
    data, key, baseline_key = KEYS_BEFORE_THE_OPTIONS[name]
    for spelled in ({}, {"split_mode": "layer", "main_gpu": 0, "tensor_split": None}):
        config = parse_config(data | spelled)
        assert (config.key, config.baseline().key) == (key, baseline_key)
        assert not {"split_mode", "tensor_split", "main_gpu", "draft_gpu"} & set(config.canonical())


def test_a_tensor_split_is_one_config_however_its_proportions_are_written():
    keys = {
        parse_config(DFLASH_DEPTHS | {"tensor_split": written}).key
        for written in ("3,1", "0.75,0.25", [3, 1, 0], [6, 2], "3/1")
    }
    assert len(keys) == 1
    config = parse_config(DFLASH_DEPTHS | {"tensor_split": "0.75,0.25"})
    assert config.tensor_split == [3.0, 1.0]
    assert parse_config(config.canonical()).key == config.key
    assert parse_config(DFLASH_DEPTHS | {"tensor_split": "1,1"}).key != config.key


def test_each_multi_gpu_option_changes_the_key_and_survives_the_canonical_round_trip():
    base = parse_config(DFLASH_DEPTHS)
    variants = [
        {"split_mode": "none"},
        {"split_mode": "none", "main_gpu": 1},
        {"split_mode": "row"},
        {"split_mode": "row", "main_gpu": 1, "tensor_split": [1, 1]},
        {"tensor_split": [1, 1]},
        {"draft_gpu": 1},
    ]
    keys = set()
    for variant in variants:
        config = parse_config(DFLASH_DEPTHS | variant)
        again = parse_config(config.canonical())
        assert again.key == config.key
        placement = ("split_mode", "tensor_split", "main_gpu", "draft_gpu")
        assert [getattr(again, n) for n in placement] == [getattr(config, n) for n in placement]
        keys.add(config.key)
    assert len(keys) == len(variants) and base.key not in keys


@pytest.mark.parametrize(
    ("variant", "field", "words"),
    [
        ({"split_mode": "none", "tensor_split": [1, 1]}, "tensor_split", "split_mode none"),
        ({"main_gpu": 1}, "main_gpu", "none or row"),
        ({"split_mode": "tensor"}, "split_mode", "'none', 'layer' or 'row'"),
        ({"tensor_split": [0, 0]}, "tensor_split", "above 0"),
        ({"tensor_split": "a,b"}, "tensor_split", "numbers separated by commas"),
        ({"tensor_split": [0.12345, 1]}, "tensor_split", "at most 4 decimals"),
        ({"tensor_split": [1] * 16}, "tensor_split", "at most 15"),
        ({"main_gpu": 16, "split_mode": "none"}, "main_gpu", "less than 16"),
    ],
)
def test_a_placement_the_engine_would_ignore_or_refuse_is_a_field_error(variant, field, words):
    errors = errors_of(DFLASH_DEPTHS | variant)
    assert words in " ".join(errors[field])


def test_a_proportion_must_be_a_finite_number_of_at_least_zero():
    for bad in (-1, True, float("nan"), float("inf"), "1"):
        assert "tensor_split.0" in errors_of(DFLASH_DEPTHS | {"tensor_split": [bad, 1]})


def test_only_a_separate_draft_model_can_have_a_gpu_of_its_own():
    mtp = {"target_model": "mtp.gguf", "spec_types": "draft-mtp", "draft_gpu": 1}
    assert "separate draft model" in errors_of(mtp)["draft_gpu"][0]
    assert "draft_gpu" in errors_of({"target_model": "t.gguf", "draft_gpu": 1})


def test_the_in_process_engine_takes_no_multi_gpu_option():
    errors = errors_of(
        {"target_model": "t.gguf", "engine": "llama-cpp-python", "split_mode": "none"}
    )
    assert "need engine llama-server" in errors["split_mode"][0]


def test_the_paired_baseline_keeps_the_targets_split_and_drops_the_drafts_gpu():
    config = parse_config(
        DFLASH_DEPTHS | {"split_mode": "row", "tensor_split": [1, 1], "main_gpu": 1, "draft_gpu": 0}
    )
    baseline = config.baseline()
    assert (baseline.split_mode, baseline.tensor_split, baseline.main_gpu) == ("row", [1.0, 1.0], 1)
    assert baseline.draft_gpu is None
    assert (
        baseline.key
        == parse_config(
            DFLASH_DEPTHS | {"split_mode": "row", "tensor_split": [1, 1], "main_gpu": 1}
        )
        .baseline()
        .key
    )


def test_the_fewest_gpus_a_config_needs_are_the_ones_its_placement_names():
    assert parse_config(DFLASH_DEPTHS).min_gpu_count == 1
    assert parse_config(DFLASH_DEPTHS | {"tensor_split": [1, 1, 2]}).min_gpu_count == 3
    assert parse_config(DFLASH_DEPTHS | {"split_mode": "none", "main_gpu": 1}).min_gpu_count == 2
    assert parse_config(DFLASH_DEPTHS | {"draft_gpu": 3}).min_gpu_count == 4
