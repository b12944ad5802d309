"""The output-length protocol: its config's bounds, its plan, each length's figures (tokens
generated, speedup and its interval) from request records, the evidence check that refuses a
per-length claim its requests contradict, and a real paired run on llama-server."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from runner import protocols
from runner.benchmark import run_benchmark
from runner.config import BenchmarkConfig, field_errors, parse_config
from runner.engines.build import locate
from runner.errors import ResultError
from runner.evidence import evidence_problem
from runner.gguf.real_model import (
    INSTALL_HINT,
    REAL_MODEL_NAME,
    place_real_model,
    real_model_installed,
)
from runner.protocols import MAX_CONTEXT, MAX_OUTPUT_LENGTHS, MAX_REQUEST_TOKENS
from runner.protocols.output_length import speedup_interval, t_quantile
from runner.results import load_result
from runner.stats import t_critical_95
from tests.support.output_length_results import (
    output_length_config,
    output_length_result,
)
from tests.support.protocol_results import categories_config, category_records, protocol_result

TARGET = "tiny-qwen3.gguf"


def output_length(**protocol) -> dict:
    return {"target_model": TARGET, "protocol": {"name": "output-length", **protocol}}


def errors_of(data: dict) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        BenchmarkConfig.model_validate(data)
    return field_errors(caught.value)


# Config


def test_defaults_are_the_issue_s_lengths_and_the_context_holds_the_longest():
    config = BenchmarkConfig.model_validate(output_length())
    assert config.protocol.output_lengths == [64, 256, 1024, 2048]
    assert config.required_total_context == 512 + 2048 + 16
    assert [p.output_tokens for p in config.protocol.points] == [64, 256, 1024, 2048]
    assert {p.input_tokens for p in config.protocol.points} == {512}


def test_the_lengths_are_part_of_the_config_s_key():
    one = BenchmarkConfig.model_validate(output_length(output_lengths=[64, 256]))
    other = BenchmarkConfig.model_validate(output_length(output_lengths=[64, 512]))
    assert one.key != other.key
    assert BenchmarkConfig.from_canonical(one.canonical()).key == one.key


@pytest.mark.parametrize(
    ("lengths", "message"),
    [
        ([], "give at least one output length"),
        ([0, 64], "output length 0 must lie between 1"),
        ([-5], "output length -5 must lie between 1"),
        ([64, MAX_REQUEST_TOKENS + 1], f"must lie between 1 and {MAX_REQUEST_TOKENS}"),
        ([256, 64], "strictly increasing, without duplicates"),
        ([64, 64, 256], "strictly increasing, without duplicates"),
        (list(range(1, MAX_OUTPUT_LENGTHS + 2)), f"at most {MAX_OUTPUT_LENGTHS} items"),
    ],
)
def test_bad_lengths_are_field_errors_that_say_why(lengths, message):
    errors = errors_of(output_length(output_lengths=lengths))
    assert any(message in text for text in errors["protocol.output-length.output_lengths"]), errors


@pytest.mark.parametrize("length", [64.0, "64", True, math.nan])
def test_lengths_are_strict_integers(length):
    errors = errors_of(output_length(output_lengths=[length]))
    assert "protocol.output-length.output_lengths.0" in errors


def test_lengths_beyond_the_context_are_refused_before_anything_runs():
    errors = errors_of(output_length(input_tokens=MAX_REQUEST_TOKENS, output_lengths=[131_072]))
    (message,) = errors["protocol.output-length.output_lengths"]
    assert f"above {MAX_CONTEXT}" in message


# Plan


def test_each_length_runs_warmup_then_its_requests_each_forced_to_its_length():
    config = BenchmarkConfig.model_validate(
        output_length(input_tokens=8, output_lengths=[16, 32], requests=2, warmup=1)
    )
    plan = protocols.plan_requests(config, vocab_size=256)
    assert [(s.phase, s.point, s.output_tokens) for s in plan] == [
        ("warmup", 0, 16), ("measure", 0, 16), ("measure", 0, 16),
        ("warmup", 1, 32), ("measure", 1, 32), ("measure", 1, 32),
    ]  # fmt: skip
    assert all(len(s.prompt) == 8 for s in plan)
    body = plan[1].body()
    assert body["n_predict"] == 16 and body["ignore_eos"] is True
    # The paired run splits every length into both ABBA rounds.
    assert protocols.split_rounds(plan, 2) == [[0, 2], [1, 3]]


# Figures from records


def test_t_quantile_between_whole_degrees_of_freedom_follows_the_table():
    assert t_quantile(7) == t_critical_95(7)
    assert t_critical_95(8) < t_quantile(7.5) < t_critical_95(7)
    assert t_quantile(0.3) == t_critical_95(1)


def test_a_length_s_speedup_interval_holds_the_ratio_and_narrows_with_less_spread():
    def point(mean, stdev, n=5):
        return {"decode_tokens_per_second": {"n": n, "mean": mean, "stdev": stdev}}

    low, high = speedup_interval(point(200.0, 10.0), point(100.0, 5.0))
    assert low < 2.0 < high
    tight = speedup_interval(point(200.0, 1.0), point(100.0, 0.5))
    assert high - low > tight[1] - tight[0] > 0
    assert speedup_interval(point(200.0, None, n=1), point(100.0, 5.0)) is None


def test_a_paired_result_carries_per_length_speedups_intervals_and_generated_tokens(models_dir):
    config = output_length_config([16, 32, 64])
    result = output_length_result(
        config, [100.0, 80.0, 50.0], [50.0, 60.0, 62.5], models_dir=models_dir
    )
    speedups = [p["speedup"] for p in result["points"]]
    assert speedups == pytest.approx([2.0, 80 / 60, 0.8], rel=1e-3)
    for point in result["points"]:
        assert point["speedup_ci95_low"] < point["speedup"] < point["speedup_ci95_high"]
        assert point["generated_tokens"]["min"] == point["output_tokens"]
        assert point["generated_tokens"]["max"] == point["output_tokens"]
    assert all(p.get("speedup_ci95_low") is None for p in result["baseline"]["points"])
    assert evidence_problem(result) is None


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (lambda r: r["points"][2].update(speedup=2.58), "points.2.speedup is 2.58"),
        (lambda r: r["points"][0].update(speedup_ci95_low=1.99),
         "points.0.speedup_ci95_low is 1.99"),
        (lambda r: r["points"][1].update(speedup_ci95_high=None),
         "points.1.speedup_ci95_high is null"),
        (lambda r: r["points"][1]["generated_tokens"].update(mean=40.0),
         "points.1.generated_tokens.mean is 40"),
        (lambda r: r["points"][0].update(output_tokens=2048),
         "points.0: 32 in, 2048 out, but the protocol's point 0 is 32 in, 16 out"),
        (lambda r: r["points"].pop(), "a measured request is at point 2, past the points"),
        (lambda r: r["baseline"]["points"][0].update(speedup_ci95_low=1.0),
         "baseline: points.0.speedup_ci95_low is 1"),
        (lambda r: r["baseline"]["points"][0].update(generated_tokens=None),
         "baseline: points.0.generated_tokens is null"),
    ],
)  # fmt: skip
def test_a_per_length_claim_the_requests_contradict_is_refused_by_name(models_dir, tamper, named):
    config = output_length_config([16, 32, 64])
    result = output_length_result(
        config, [100.0, 80.0, 50.0], [50.0, 60.0, 62.5], models_dir=models_dir
    )
    tamper(result)
    problem = evidence_problem(result)
    assert problem is not None and named in problem
    with pytest.raises(ResultError):
        load_result(result)


def test_a_nan_interval_is_refused_at_the_door(models_dir):
    config = output_length_config([16, 32])
    result = output_length_result(config, [100.0, 80.0], [50.0, 60.0], models_dir=models_dir)
    result["points"][0]["speedup_ci95_low"] = math.nan
    with pytest.raises(ResultError, match="speedup_ci95_low"):
        load_result(result)


def test_an_output_length_figure_on_another_protocol_s_point_is_refused(models_dir):
    config = categories_config(["code", "math"])
    result = protocol_result(
        config, category_records(config, {"code": 50.0, "math": 40.0}, None), None,
        models_dir=models_dir,
    )  # fmt: skip
    assert evidence_problem(result) is None
    claimed = copy.deepcopy(result)
    claimed["points"][0]["generated_tokens"] = claimed["points"][0]["decode_tokens_per_second"]
    assert "points.0.generated_tokens: only output-length points" in evidence_problem(claimed)
    claimed = copy.deepcopy(result)
    claimed["points"][1]["speedup_ci95_high"] = 3.0
    assert "points.1.speedup_ci95_high is 3, but" in evidence_problem(claimed)


def test_an_unpaired_result_has_no_interval_and_claiming_one_is_refused(models_dir):
    config = output_length_config([16, 32])
    result = output_length_result(config, [100.0, 80.0], None, models_dir=models_dir)
    assert [p["speedup"] for p in result["points"]] == [None, None]
    assert evidence_problem(result) is None
    result["points"][0]["speedup_ci95_low"] = 1.5
    assert "points.0.speedup_ci95_low is 1.5, but" in evidence_problem(result)


# On the real engine


@pytest.mark.engine
def test_the_output_length_protocol_runs_on_llama_server_with_its_paired_baseline(models_dir):
    config = parse_config(
        {"target_model": TARGET, "draft_model": TARGET, "spec_types": "draft-simple"}
        | {"n_max": 4, "threads": 2}
        | output_length(input_tokens=16, output_lengths=[16, 32, 64], requests=2, warmup=1)
    )  # fmt: skip
    result = run_benchmark(config, models_dir=models_dir, engine=locate(), with_baseline=True)
    data = result.model_dump(mode="json")

    assert [p["output_tokens"] for p in data["points"]] == [16, 32, 64]
    for section in (data, data["baseline"]):
        # ignore_eos forces every request to its length: generated is what was asked.
        for point in section["points"]:
            assert point["generated_tokens"]["n"] == 2
            assert point["generated_tokens"]["min"] == point["output_tokens"]
            assert point["generated_tokens"]["max"] == point["output_tokens"]
        assert all(r["predicted_n"] == r["output_tokens_requested"] for r in section["requests"])
    for point, reference in zip(data["points"], data["baseline"]["points"], strict=True):
        ratio = (
            point["decode_tokens_per_second"]["mean"]
            / reference["decode_tokens_per_second"]["mean"]
        )
        assert point["speedup"] == pytest.approx(ratio)
        assert point["speedup_ci95_low"] <= point["speedup"] <= point["speedup_ci95_high"]
        assert point["acceptance_rate"] > 0.5
    # Each length is measured in both ABBA rounds.
    rounds = data["provenance"]["paired_rounds"]
    assert [r["order"][0] for r in rounds] == ["baseline", "speculative"]
    assert sorted(i for r in rounds for i in r["request_indices"]) == list(range(6))

    tampered = copy.deepcopy(data)
    tampered["points"][2]["speedup"] = tampered["points"][2]["speedup"] * 3
    with pytest.raises(ResultError, match="points.2.speedup"):
        load_result(tampered)
    assert load_result(data) == result


@pytest.fixture(scope="module")
def real_models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("real-models")
    place_real_model(directory)
    return directory


@pytest.mark.engine
@pytest.mark.skipif(not real_model_installed(), reason=f"no real model ({INSTALL_HINT})")
def test_a_real_model_generates_every_token_asked_at_each_length(real_models_dir):
    """Gemma 3 270M may stop at its end-of-text token; ignore_eos keeps it generating, so each
    length's figure is measured at the length it names."""
    config = parse_config(
        output_length(input_tokens=16, output_lengths=[8, 48], requests=2, warmup=0)
        | {"target_model": REAL_MODEL_NAME, "draft_model": REAL_MODEL_NAME}
        | {"spec_types": "draft-simple", "n_max": 4, "threads": 1}
    )  # fmt: skip
    result = run_benchmark(config, models_dir=real_models_dir, engine=locate(), with_baseline=True)
    data = result.model_dump(mode="json")
    for section in (data, data["baseline"]):
        assert [p["generated_tokens"]["min"] for p in section["points"]] == [8, 48]
        assert [p["generated_tokens"]["max"] for p in section["points"]] == [8, 48]
        assert not any(r["stopped_early"] for r in section["requests"])
    for point in data["points"]:
        assert point["speedup_ci95_low"] <= point["speedup"] <= point["speedup_ci95_high"]
        # The model drafts for itself: most drafts are its own next tokens.
        assert point["acceptance_rate"] > 0.5
