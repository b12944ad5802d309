"""The concurrency protocol: its config's bounds, its waves, its budget, its per-level figures and
crossover from request records, the evidence check of its points, and a real run on llama-server
with its paired baseline."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from pydantic import ValidationError

from runner import protocols, stats
from runner.benchmark import run_benchmark
from runner.config import BenchmarkConfig, field_errors, parse_config
from runner.engines.build import Engine
from runner.engines.concurrent import share_out, wave_records
from runner.engines.measure import Completion, SpecCounters
from runner.engines.server import server_argv
from runner.errors import ResultError
from runner.evidence import evidence_problem
from runner.gguf.real_model import (
    INSTALL_HINT,
    REAL_MODEL_NAME,
    place_real_model,
    real_model_installed,
)
from runner.pairing import combined_speedup, crossover_concurrency, pair_with_baseline, point_speed
from runner.prompts import load_suite
from runner.protocols import MAX_CONTEXT
from runner.results import load_result
from tests.support.legacy_fields import without_legacy_fields

TARGET = "tiny-qwen3.gguf"
SELF_DRAFT = {"target_model": TARGET, "draft_model": TARGET, "spec_types": "draft-simple"}


def concurrency(**protocol) -> dict:
    return {"target_model": TARGET, "protocol": {"name": "concurrency", **protocol}}


def errors_of(data: dict) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        BenchmarkConfig.model_validate(data)
    return field_errors(caught.value)


# Config


def test_defaults_are_the_issue_s_levels_and_the_context_is_per_slot_times_the_largest_level():
    config = parse_config(concurrency())
    protocol = config.protocol
    assert (protocol.levels, protocol.input_tokens, protocol.output_tokens) == (
        [1, 2, 4, 8, 16],
        512,
        256,
    )
    assert (protocol.rounds, protocol.warmup, protocol.seed) == (3, 1, 42)
    assert protocol.required_context() == 512 + 256 + 16
    assert config.effective_ctx_size == (512 + 256 + 16) * 16
    assert config.context_for_slots(4) == (512 + 256 + 16) * 4


def test_every_number_is_overridable_and_the_key_changes_with_it():
    base = parse_config(concurrency())
    for change in ({"levels": [1, 3]}, {"rounds": 5}, {"warmup": 0}, {"input_tokens": 64}):
        assert parse_config(concurrency(**change)).key != base.key


def test_a_given_context_is_shared_out_per_slot_at_each_level():
    config = parse_config(concurrency(levels=[1, 2, 4], input_tokens=64, output_tokens=32) | {
        "ctx_size": 4000
    })  # fmt: skip
    assert [config.context_for_slots(n) for n in (1, 2, 4)] == [1000, 2000, 4000]


def test_each_level_s_server_gets_that_many_slots_and_the_context_for_them(tmp_path: Path):
    config = parse_config(concurrency(levels=[1, 2, 8], input_tokens=100, output_tokens=50))
    engine = Engine(server_path="/bin/llama-server", release="b11434", backend="cpu")
    argv = server_argv(config, engine=engine, target_path=tmp_path / TARGET, draft_path=None,
                       port=8080, slots=8)  # fmt: skip
    assert argv[argv.index("-np") + 1] == "8"
    assert argv[argv.index("-c") + 1] == str(166 * 8)


@pytest.mark.parametrize("level", [0, 65, 1000])
def test_a_level_outside_the_engine_s_slot_limit_is_a_field_error(level):
    errors = errors_of(concurrency(levels=[1, level] if level > 1 else [level, 2]))
    assert list(errors) == ["protocol.concurrency.levels"]
    assert "slot limit" in errors["protocol.concurrency.levels"][0]


@pytest.mark.parametrize("levels", [[1, 2, 2], [4, 2], [1, 1]])
def test_levels_must_strictly_increase(levels):
    errors = errors_of(concurrency(levels=levels))
    assert errors == {
        "protocol.concurrency.levels": ["levels must be strictly increasing, without duplicates"]
    }


def test_no_level_and_too_many_levels_are_field_errors():
    assert errors_of(concurrency(levels=[])) == {
        "protocol.concurrency.levels": ["give at least one concurrency level"]
    }
    assert "protocol.concurrency.levels" in errors_of(concurrency(levels=list(range(1, 18))))


@pytest.mark.parametrize("level", ["2", 2.0, True, None])
def test_levels_are_strict_integers(level):
    errors = errors_of(concurrency(levels=[1, level]))
    assert list(errors) == ["protocol.concurrency.levels.1"]


def test_a_total_context_above_the_maximum_is_a_field_error_before_anything_runs():
    # 64 slots of 8192 + 8192 + 16 tokens would need about a million tokens of context.
    errors = errors_of(concurrency(levels=[1, 64], input_tokens=8192, output_tokens=8192))
    (message,) = errors["protocol.concurrency.levels"]
    assert message == (
        f"64 slots of 16400 tokens need {16400 * 64} tokens of context, above {MAX_CONTEXT}"
    )


def test_a_given_context_too_small_for_the_largest_level_is_refused():
    errors = errors_of(
        concurrency(levels=[1, 4], input_tokens=100, output_tokens=100) | {"ctx_size": 600}
    )
    assert errors == {"ctx_size": ["600 is too small for the protocol, which needs 864 tokens"]}


def test_the_in_process_engine_cannot_run_requests_at_once():
    errors = errors_of(concurrency() | {"engine": "llama-cpp-python"})
    assert list(errors) == ["protocol"]
    assert "needs engine llama-server" in errors["protocol"][0]


def test_a_stored_concurrency_config_parses_back_to_the_same_key():
    config = parse_config(SELF_DRAFT | concurrency(levels=[1, 2], input_tokens=8, output_tokens=8))
    assert config.canonical()["ctx_size"] == 64  # below MIN_CONTEXT, derived
    assert parse_config(config.canonical()).key == config.key
    assert config.baseline().effective_ctx_size == config.effective_ctx_size


# Planning and budget


def test_each_level_runs_warmup_then_measured_waves_of_level_distinct_exact_prompts():
    config = parse_config(concurrency(levels=[1, 3], input_tokens=16, output_tokens=8, rounds=2))
    plan = protocols.plan_requests(config, vocab_size=4096)
    waves = protocols.waves(plan)
    shape = [(w[0].phase, w[0].point, w[0].round, len(w)) for w in waves]
    assert shape == [
        ("warmup", 0, 0, 1), ("measure", 0, 0, 1), ("measure", 0, 1, 1),
        ("warmup", 1, 0, 3), ("measure", 1, 0, 3), ("measure", 1, 1, 3),
    ]  # fmt: skip
    assert all(spec.concurrency == (1, 3)[spec.point] for spec in plan)
    assert all(len(spec.prompt) == 16 and spec.input_tokens == 16 for spec in plan)
    assert len({spec.prompt_sha256 for spec in plan}) == len(plan)
    body = plan[0].body()
    assert (body["ignore_eos"], body["top_k"], body["n_predict"]) == (True, 1, 8)


def test_the_baseline_plans_the_same_prompts_and_the_seed_changes_them():
    config = parse_config(SELF_DRAFT | concurrency(levels=[1, 2], input_tokens=16, output_tokens=8))
    hashes = [s.prompt_sha256 for s in protocols.plan_requests(config, vocab_size=4096)]
    baseline = [
        s.prompt_sha256 for s in protocols.plan_requests(config.baseline(), vocab_size=4096)
    ]
    other = parse_config(SELF_DRAFT | concurrency(levels=[1, 2], input_tokens=16,
                                                  output_tokens=8, seed=43))  # fmt: skip
    assert hashes == baseline
    assert hashes != [s.prompt_sha256 for s in protocols.plan_requests(other, vocab_size=4096)]


# Suite prompts


def test_token_id_prompts_stay_the_default_and_keep_the_keys_they_had():
    config = parse_config(concurrency())
    assert (config.protocol.prompts, config.protocol.suite) == ("token-ids", None)
    assert "prompts" not in config.canonical()["protocol"]
    assert "suite" not in config.canonical()["protocol"]
    assert config.key == "c5864f1ed255f0cf"  # its key before the option existed


def test_suite_prompts_name_their_suite_and_are_a_workload_of_their_own():
    config = parse_config(concurrency(prompts="suite"))
    protocol = config.canonical()["protocol"]
    assert (protocol["prompts"], protocol["suite"]) == ("suite", "2")
    assert config.key != parse_config(concurrency()).key
    assert parse_config(config.canonical()).key == config.key
    assert errors_of(concurrency(suite="2")) == {
        "protocol.concurrency": ['a suite is named, but prompts is "token-ids": name none']
    }


def test_suite_prompts_are_distinct_texts_of_the_suite_bounded_by_the_input_length():
    config = parse_config(SELF_DRAFT | concurrency(prompts="suite", levels=[1, 4], input_tokens=128,
                                                   output_tokens=8, rounds=2))  # fmt: skip
    plan = protocols.plan_requests(config, vocab_size=4096)
    suite = load_suite()
    texts = {p for prompts in suite.categories.values() for p in prompts}
    assert len(plan) == (1 + 4) * (1 + 2)
    assert all(isinstance(s.prompt, str) and s.prompt in texts for s in plan)
    assert all(len(s.prompt.encode()) <= 2 * 128 and s.input_tokens is None for s in plan)
    assert len({s.prompt for s in plan}) == len(plan)
    assert [s.concurrency for s in plan] == [1] * 3 + [4] * 12
    # The baseline sends the same texts, request by request; another seed sends others.
    assert [s.prompt for s in protocols.plan_requests(config.baseline(), vocab_size=9)] == [
        s.prompt for s in plan
    ]
    other = config.model_copy(update={"protocol": config.protocol.model_copy(update={"seed": 43})})
    assert [s.prompt for s in protocols.plan_requests(other, vocab_size=4096)] != [
        s.prompt for s in plan
    ]
    # The budget counts the texts' estimated tokens, not input_tokens a request.
    budget = protocols.token_budget(config)
    assert budget["requests"] == len(plan)
    assert budget["prompt_tokens"] == sum(protocols.text_tokens(s.prompt) for s in plan)


def test_more_requests_than_the_suite_has_short_prompts_is_a_field_error():
    (message,) = errors_of(concurrency(prompts="suite", levels=[8, 16, 32], input_tokens=64))[
        "protocol.concurrency"
    ]
    assert "224 requests need as many distinct prompts, but suite 2 has" in message
    assert "of at most 128 bytes (input_tokens 64)" in message


def test_a_suite_prompt_level_states_no_input_length():
    config = parse_config(SELF_DRAFT | concurrency(prompts="suite", levels=[1], input_tokens=64,
                                                   output_tokens=8, rounds=1))  # fmt: skip
    (point,) = stats.depth_points(config, [])
    assert point["input_tokens"] is None and point["concurrency"] == 1


def test_the_token_budget_counts_every_wave_and_the_baseline_s_warm_ups_per_session():
    config = parse_config(concurrency(levels=[1, 2, 4], input_tokens=100, output_tokens=10,
                                      rounds=3, warmup=1))  # fmt: skip
    requests = (1 + 2 + 4) * (1 + 3)
    assert protocols.token_budget(config) == {
        "requests": requests,
        "prompt_tokens": requests * 100,
        "generated_tokens": requests * 10,
        "total_tokens": requests * 110,
    }
    # The baseline warms each level up again in its second session (two ABBA rounds).
    warmups = (1 + 2 + 4) * 1
    assert protocols.token_budget(config, with_baseline=True)["requests"] == 2 * requests + warmups
    assert len(protocols.plan_requests(config, vocab_size=512)) == requests


# Per-request counters of a wave


def test_shares_add_up_exactly_and_follow_the_weights():
    assert share_out(10, [1, 1, 1]) == [4, 3, 3]
    assert share_out(7, [0, 6, 1]) == [0, 6, 1]
    assert share_out(5, [0, 0]) == [3, 2]
    assert sum(share_out(101, [3, 5, 9, 1])) == 101


def test_a_wave_keeps_each_response_s_draft_counts_and_shares_out_the_metrics_counters():
    config = parse_config(SELF_DRAFT | concurrency(levels=[2], input_tokens=4, output_tokens=6))
    specs = protocols.plan_requests(config, vocab_size=512)[-2:]
    completions = [
        Completion([5] * 6, {"predicted_n": 6, "predicted_ms": 3.0, "prompt_n": 4,
                             "prompt_ms": 1.0, "draft_n": 8, "draft_n_accepted": 4}, 0.01, None),
        Completion([6] * 6, {"predicted_n": 6, "predicted_ms": 2.0, "prompt_n": 4,
                             "prompt_ms": 1.0, "draft_n": 4, "draft_n_accepted": 1}, 0.02, None),
    ]  # fmt: skip
    delta = SpecCounters(draft_tokens=12, accepted_tokens=5, verify_steps=6,
                         accepted_per_position={0: 3, 1: 2})  # fmt: skip
    records = wave_records(specs, completions, delta)
    assert [(r["draft_n"], r["draft_n_accepted"]) for r in records] == [(8, 4), (4, 1)]
    assert [r["verify_steps"] for r in records] == [4, 2]
    assert sum(r["verify_steps"] for r in records) == 6
    positions = [r["accepted_per_position"] for r in records]
    assert [sum(column) for column in zip(*positions, strict=True)] == [3, 2]
    # Pooled over the wave, tau is the server's own: 1 + 5 accepted / 6 verify steps.
    assert stats.acceptance_and_tau(records) == (5 / 12, pytest.approx(1 + 5 / 6))
    assert all(r["tau"] is None for r in records)


# Points and crossover from hand-made records


def record(point: int, level: int, wave: int, *, decode: float, predicted_n: int = 10,
           wall_ms: float = 100.0, ttft: float = 5.0, drafted: int = 0, accepted: int = 0,
           steps: int = 0) -> dict:  # fmt: skip
    """A measured record of a concurrency level with the fields its figures read."""
    return {
        "phase": "measure", "point": point, "round": wave, "concurrency": level,
        "category": None, "decode_tokens_per_second": decode,
        "end_to_end_tokens_per_second": decode / 2, "ttft_ms": ttft, "predicted_n": predicted_n,
        "wall_ms": wall_ms, "draft_n": drafted, "draft_n_accepted": accepted,
        "verify_steps": steps, "accepted_per_position": [], "distinct_4gram_ratio": 1.0,
        "stopped_early": False,
    }  # fmt: skip


LEVELS = [1, 2]


def level_records(walls: dict[int, list[list[float]]], decode: float = 50.0) -> list[dict]:
    """Records of levels 1 and 2, two rounds each; walls[level][round] lists each request's."""
    return [
        record(point, level, wave, decode=decode, wall_ms=wall, drafted=4, accepted=2, steps=2)
        for point, level in enumerate(LEVELS)
        for wave, round_walls in enumerate(walls[level])
        for wall in round_walls
    ]


def points_of(records: list[dict]) -> list[dict]:
    config = parse_config(concurrency(levels=LEVELS, input_tokens=8, output_tokens=10, rounds=2))
    return stats.depth_points(config, records)


def test_a_level_s_aggregate_is_each_round_s_tokens_over_its_slowest_request_s_time():
    records = level_records({1: [[100.0], [200.0]], 2: [[100.0, 250.0], [125.0, 100.0]]})
    points = points_of(records)
    assert [p["concurrency"] for p in points] == LEVELS
    level_one, level_two = (p["aggregate_tokens_per_second"] for p in points)
    # Level 1: 10 tokens in 0.1 s and in 0.2 s; level 2: 20 tokens in 0.25 s and in 0.125 s.
    assert (level_one["n"], level_one["mean"]) == (2, pytest.approx((100 + 50) / 2))
    assert (level_two["n"], level_two["mean"]) == (2, pytest.approx((80 + 160) / 2))
    assert level_two["ci95_low"] < level_two["mean"] < level_two["ci95_high"]
    assert points[1]["decode_tokens_per_second"]["n"] == 4
    assert points[1]["ttft_ms"]["mean"] == 5.0
    assert points[0]["acceptance_rate"] == 0.5 and points[0]["tau"] == 2.0


def test_speedup_per_level_is_aggregate_over_aggregate_and_the_crossover_is_where_it_drops():
    speculative = level_records({1: [[100.0], [100.0]], 2: [[200.0, 200.0], [200.0, 200.0]]})
    baseline = level_records({1: [[150.0], [150.0]], 2: [[150.0, 150.0], [150.0, 150.0]]})
    # Per-request decode is the same everywhere, so only the aggregate tells the levels apart.
    pairing = pair_with_baseline(
        points=points_of(speculative), baseline_points=points_of(baseline),
        outputs=[[1]] * len(speculative), baseline_outputs=[[1]] * len(baseline),
        synthetic=False,
    )  # fmt: skip
    assert pairing.point_speedups == [pytest.approx(1.5), pytest.approx(0.75)]
    assert pairing.crossover_concurrency == 2


def test_no_crossover_when_every_level_pays_or_nothing_is_paired():
    points = [{"concurrency": 1}, {"concurrency": 2}, {"concurrency": 4}]
    assert crossover_concurrency(points, [2.0, 1.5, 1.0]) is None
    assert crossover_concurrency(points, [None, None, None]) is None
    assert crossover_concurrency(points, [2.0, 0.9, 0.5]) == 2
    assert crossover_concurrency([{"input_tokens": 512}], [0.5]) is None


# Evidence


def section(records: list[dict]) -> dict:
    return {"summary": stats.pooled_figures(records), "points": points_of(records),
            "requests": records}  # fmt: skip


def paired_result() -> dict:
    speculative = level_records({1: [[100.0], [100.0]], 2: [[200.0, 200.0], [200.0, 200.0]]})
    baseline = level_records({1: [[150.0], [150.0]], 2: [[150.0, 150.0], [150.0, 150.0]]})
    result = section(speculative) | {"baseline": section(baseline)}
    # Each level's speedup and their geometric mean, as the runner pairs them (runner.pairing).
    speedups = [
        stats.ratio(point_speed(point), point_speed(reference))
        for point, reference in zip(result["points"], result["baseline"]["points"], strict=True)
    ]
    for point, speedup in zip(result["points"], speedups, strict=True):
        point["speedup"] = speedup
    result["summary"] |= {
        "speedup": combined_speedup(speedups),
        "baseline_decode_tokens_per_second": result["baseline"]["summary"][
            "decode_tokens_per_second"
        ]["mean"],
        "crossover_concurrency": 2,
    }
    return result


def test_a_paired_concurrency_result_built_from_its_records_agrees_with_them():
    assert evidence_problem(paired_result()) is None


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (lambda r: r["points"][1]["aggregate_tokens_per_second"].update(mean=999.0),
         "points.1.aggregate_tokens_per_second.mean is 999"),
        (lambda r: r["points"][0]["ttft_ms"].update(max=50.0), "points.0.ttft_ms.max is 50"),
        (lambda r: r["points"][1].update(aggregate_tokens_per_second=None),
         "points.1.aggregate_tokens_per_second.n is null"),
        (lambda r: r["points"][1].update(concurrency=4), "points.1.concurrency is 4"),
        (lambda r: r["requests"][3].update(round=None), "of point 1 (a concurrency level) has no"),
        (lambda r: r["summary"].update(crossover_concurrency=None),
         "summary.crossover_concurrency is null, but the requests of the result and its "
         "baseline give 2"),
        (lambda r: r["baseline"]["points"][0]["aggregate_tokens_per_second"].update(n=3),
         "baseline: points.0.aggregate_tokens_per_second.n is 3"),
    ],
)  # fmt: skip
def test_a_tampered_concurrency_point_or_crossover_is_refused_by_name(tamper, named):
    result = paired_result()
    tamper(result)
    problem = evidence_problem(result)
    assert problem is not None and named in problem


def test_a_crossover_claimed_without_a_baseline_is_refused():
    records = level_records({1: [[100.0], [100.0]], 2: [[200.0, 200.0], [200.0, 200.0]]})
    result = section(records)
    result["summary"]["crossover_concurrency"] = 1
    assert evidence_problem(result) == (
        "summary.crossover_concurrency is 1, but the requests of the result and its baseline "
        "give null"
    )


# On the real engine


@pytest.mark.engine
def test_the_concurrency_protocol_runs_on_llama_server_with_its_paired_baseline(models_dir, engine):
    config = parse_config(
        SELF_DRAFT | {"n_max": 4, "threads": 2}
        | concurrency(levels=[1, 2], input_tokens=32, output_tokens=16, rounds=2, warmup=1)
    )  # fmt: skip
    result = run_benchmark(config, models_dir=models_dir, engine=engine, with_baseline=True)
    data = result.model_dump(mode="json")

    assert [p["concurrency"] for p in data["points"]] == [1, 2]
    for point, level in zip(data["points"], [1, 2], strict=True):
        assert point["aggregate_tokens_per_second"]["n"] == 2
        assert point["decode_tokens_per_second"]["n"] == 2 * level
        assert point["ttft_ms"]["n"] == 2 * level
        assert point["speedup"] == pytest.approx(
            point["aggregate_tokens_per_second"]["mean"]
            / data["baseline"]["points"][level - 1]["aggregate_tokens_per_second"]["mean"]
        )
        # Self-drafting with the target accepts its drafts (batched verification at level 2
        # may flip a near tie of the random weights, so only level 1 must accept every one).
        assert point["acceptance_rate"] == 1.0 if level == 1 else point["acceptance_rate"] > 0.5
        assert point["tau"] > 1.0
    below = [p["concurrency"] for p in data["points"] if p["speedup"] < 1]
    assert data["summary"]["crossover_concurrency"] == (min(below) if below else None)
    requests = data["requests"]
    assert [(r["point"], r["concurrency"], r["round"]) for r in requests] == [
        (0, 1, 0), (0, 1, 1), (1, 2, 0), (1, 2, 0), (1, 2, 1), (1, 2, 1)
    ]  # fmt: skip
    assert all(r["predicted_n"] == 16 and r["prompt_n"] == 32 for r in requests)
    assert [r["tau"] is None for r in requests] == [False, False, True, True, True, True]
    assert len({r["prompt_sha256"] for r in requests}) == 6
    # Same prompts as the baseline, request by request, and each output compared with the
    # baseline's: identical alone, identical or a near tie when batched.
    assert [r["prompt_sha256"] for r in requests] == [
        r["prompt_sha256"] for r in data["baseline"]["requests"]
    ]
    assert all(r["first_divergence"] is None for r in requests[:2])
    assert all(r["divergence"] in (None, "near tie") for r in requests)
    assert data["summary"]["lossless"] is (all(r["first_divergence"] is None for r in requests))
    # One server per level, each with its own slots.
    commands = data["provenance"]["command"].splitlines()
    assert len(commands) == 2 and "-np 1" in commands[0] and "-np 2" in commands[1]
    assert data["provenance"]["token_budget"]["requests"] == 2 * (1 + 2) * 3 + (1 + 2)
    # Each level ran its own two rounds, baseline first, then speculative first.
    assert [(r["concurrency"], r["order"][0]) for r in data["provenance"]["paired_rounds"]] == [
        (1, "baseline"), (1, "speculative"), (2, "baseline"), (2, "speculative"),
    ]  # fmt: skip

    tampered = copy.deepcopy(data)
    tampered["points"][1]["aggregate_tokens_per_second"]["mean"] *= 2
    with pytest.raises(ResultError, match="points.1.aggregate_tokens_per_second.mean"):
        load_result(tampered)
    assert load_result(data) == result
    # The runner sets every field of its result, the new protocols' included, but those only
    # older files carry.
    assert result.model_dump(mode="json", exclude_unset=True) == without_legacy_fields(data)


@pytest.mark.engine
def test_suite_prompts_under_load_give_every_level_its_tau_on_llama_server(models_dir, engine):
    config = parse_config(
        SELF_DRAFT | {"n_max": 4, "threads": 2}
        | concurrency(prompts="suite", levels=[1, 2], input_tokens=64, output_tokens=16,
                      rounds=2, warmup=1)
    )  # fmt: skip
    result = run_benchmark(config, models_dir=models_dir, engine=engine, with_baseline=False)
    data = result.model_dump(mode="json")

    assert data["config"]["protocol"]["prompts"] == "suite"
    assert data["config"]["protocol"]["suite"] == "2"
    requests = [r for r in data["requests"] if r["phase"] == "measure"]
    suite = load_suite()
    hashes = {protocols.RequestSpec("measure", 0, None, 1, p, 0).prompt_sha256: p
              for prompts in suite.categories.values() for p in prompts}  # fmt: skip
    assert all(r["prompt_sha256"] in hashes for r in data["requests"])
    assert len({r["prompt_sha256"] for r in data["requests"]}) == len(data["requests"]) == 6
    # No request above level 1 has a tau of its own; every level has one, from its counts.
    assert [r["tau"] is None for r in requests] == [False, False, True, True, True, True]
    for point in data["points"]:
        mine = [r for r in requests if r["concurrency"] == point["concurrency"]]
        steps = sum(r["verify_steps"] for r in mine)
        accepted = sum(sum(r["accepted_per_position"]) or r["draft_n_accepted"] for r in mine)
        assert steps > 0 and point["tau"] == pytest.approx(1 + accepted / steps)
        assert point["tau"] > 1.0 and point["input_tokens"] is None
        assert point["acceptance_rate"] == pytest.approx(
            sum(r["draft_n_accepted"] for r in mine) / sum(r["draft_n"] for r in mine)
        )
    assert load_result(data) == result


@pytest.mark.engine
@pytest.mark.skipif(not real_model_installed(), reason=f"no real model ({INSTALL_HINT})")
def test_on_the_real_model_suite_prompts_give_each_level_a_real_acceptance(tmp_path, engine):
    """Gemma 3 270M drafting for itself on the suite's text prompts, one and two requests at a
    time: every level drafts and accepts on real text (token ids give a real draft nothing to
    go on), and at two requests, where no request has a tau of its own, the level's tau is
    derived from its wave's verify steps."""
    place_real_model(tmp_path)
    config = parse_config(
        concurrency(levels=[1, 2], input_tokens=64, output_tokens=16, rounds=1, warmup=0,
                    prompts="suite")
        | {"target_model": REAL_MODEL_NAME, "draft_model": REAL_MODEL_NAME}
        | {"spec_types": "draft-simple", "n_max": 4, "threads": 1}
    )  # fmt: skip
    data = run_benchmark(config, models_dir=tmp_path, engine=engine).model_dump(mode="json")
    requests = [r for r in data["requests"] if r["phase"] == "measure"]
    assert len({r["prompt_sha256"] for r in requests}) == 3  # a distinct suite text each
    assert [r["tau"] is None for r in requests] == [False, True, True]
    for point in data["points"]:
        assert point["acceptance_rate"] > 0.3 and point["tau"] > 1.5
        mine = [r for r in requests if r["concurrency"] == point["concurrency"]]
        drafted = sum(r["draft_n"] for r in mine)
        assert drafted > 0 and point["acceptance_rate"] == pytest.approx(
            sum(r["draft_n_accepted"] for r in mine) / drafted
        )
    assert load_result(data).config.protocol.prompts == "suite"
