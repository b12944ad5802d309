"""Summary statistics (runner.stats): the Student-t interval, pooled figures, per-depth points, and
degenerate output (is_degenerate): loops of long cycles, collapse, early stops."""

import math
import random

import pytest

from runner.config import parse_config
from runner.engines.measure import SpecCounters, build_record
from runner.protocols import RequestSpec
from runner.results import RequestRecord
from runner.stats import (
    DEGENERATE_DISTINCT_RATIO,
    depth_points,
    is_degenerate,
    pooled_figures,
    summarize,
    t_critical_95,
)


def test_summary_has_a_student_t_confidence_interval():
    summary = summarize([10.0, 12.0, 11.0, 13.0, 9.0])
    assert summary["n"] == 5 and summary["mean"] == pytest.approx(11.0)
    half = 2.776 * math.sqrt(2.5) / math.sqrt(5)
    assert summary["ci95_low"] == pytest.approx(11.0 - half)
    assert summary["ci95_high"] == pytest.approx(11.0 + half)


def test_t_critical_values_approach_the_normal_value():
    assert t_critical_95(1) == pytest.approx(12.706)
    assert 1.96 < t_critical_95(1000) < t_critical_95(100) < t_critical_95(30)


def test_summary_of_no_values_is_all_nones():
    assert summarize([]) == dict.fromkeys(
        ("mean", "median", "stdev", "min", "max", "ci95_low", "ci95_high")
    ) | {"n": 0}


def test_summary_of_one_value_has_a_mean_but_no_spread_and_no_interval():
    # One request is no evidence of spread: no stdev and no interval, not a zero-width one.
    assert summarize([5.0]) == {
        "n": 1,
        "mean": 5.0,
        "median": 5.0,
        "stdev": None,
        "min": 5.0,
        "max": 5.0,
        "ci95_low": None,
        "ci95_high": None,
    }


def test_summary_of_two_values_has_the_widest_t_interval():
    summary = summarize([4.0, 6.0])
    assert summary["n"] == 2 and summary["mean"] == 5.0 and summary["median"] == 5.0
    assert summary["stdev"] == pytest.approx(math.sqrt(2))
    # One degree of freedom: t = 12.706, half-width t * s / sqrt(2) = 12.706.
    assert summary["ci95_low"] == pytest.approx(5.0 - 12.706)
    assert summary["ci95_high"] == pytest.approx(5.0 + 12.706)


def record(**fields) -> dict:
    """A measured request record with the fields the pooled figures read."""
    return {
        "point": 0,
        "decode_tokens_per_second": 100.0,
        "end_to_end_tokens_per_second": 90.0,
        "ttft_ms": 5.0,
        "draft_n": 0,
        "draft_n_accepted": 0,
        "verify_steps": 0,
        "accepted_per_position": [],
        "distinct_4gram_ratio": 1.0,
        "stopped_early": False,
        **fields,
    }


def test_pooled_acceptance_and_tau_count_every_request_together():
    records = [
        record(draft_n=8, draft_n_accepted=6, verify_steps=4, accepted_per_position=[4, 2]),
        record(draft_n=2, draft_n_accepted=0, verify_steps=1, accepted_per_position=[0, 0]),
    ]
    figures = pooled_figures(records)
    assert figures["acceptance_rate"] == pytest.approx(6 / 10)
    assert figures["tau"] == pytest.approx(1 + 6 / 5)
    assert figures["acceptance_by_position"] == pytest.approx([4 / 5, 2 / 5])
    assert (figures["draft_tokens"], figures["draft_accepted"], figures["verify_steps"]) == (
        10,
        6,
        5,
    )
    assert figures["decode_tokens_per_second"]["n"] == 2 and not figures["degenerate"]


def test_repetitive_or_short_output_marks_the_summary_degenerate():
    assert pooled_figures([record(distinct_4gram_ratio=0.05)])["degenerate"]
    assert pooled_figures([record(stopped_early=True)])["degenerate"]


def test_depth_points_follow_the_protocol_one_point_a_depth():
    config = parse_config(
        {
            "target_model": "t.gguf",
            "protocol": {"name": "depth", "depths": [64, 128], "output_tokens": 8, "requests": 2},
        }
    )
    points = depth_points(config, [record(point=0, decode_tokens_per_second=10.0), record(point=1)])
    assert [(p["input_tokens"], p["output_tokens"]) for p in points] == [(64, 8), (128, 8)]
    assert points[0]["decode_tokens_per_second"]["mean"] == 10.0
    assert all(p["speedup"] is None for p in points)
    quick = depth_points(parse_config({"target_model": "t.gguf"}), [record()])
    assert [(p["input_tokens"], p["output_tokens"]) for p in quick] == [(None, 1500)]


# Degenerate output -----------------------------------------------------------------------------


OUTPUT_TOKENS = 1500


def varied_text(length: int, *, seed: int) -> list[int]:
    """Token ids shaped like prose: Zipf-like word frequencies, frequent short phrases, no loop."""
    rng = random.Random(seed)
    vocabulary = list(range(1000, 33000))
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    phrases = [rng.choices(vocabulary, weights, k=rng.randint(2, 6)) for _ in range(40)]
    tokens: list[int] = []
    while len(tokens) < length:
        if rng.random() < 0.2:
            tokens += rng.choice(phrases)
        else:
            tokens += rng.choices(vocabulary, weights, k=rng.randint(1, 8))
    return tokens[:length]


def record_of(tokens: list[int], *, requested: int = OUTPUT_TOKENS) -> dict:
    """The per-request record the runner builds for a response that generated these tokens."""
    spec = RequestSpec("measure", 0, None, requested, "prompt", 1)
    timings = {"prompt_n": 20, "prompt_ms": 2.0, "predicted_n": len(tokens), "predicted_ms": 900.0}
    return build_record(
        spec=spec, timings=timings, tokens=tokens, wall_s=1.0, ttft_s=0.01, counters=SpecCounters()
    )


def looping(prefix: int, period: int, *, seed: int = 7) -> list[int]:
    """OUTPUT_TOKENS tokens: some varied text, then one cycle of distinct tokens over and over."""
    cycle = varied_text(period, seed=seed + 1)
    tokens = varied_text(prefix, seed=seed)
    while len(tokens) < OUTPUT_TOKENS:
        tokens += cycle
    return tokens[:OUTPUT_TOKENS]


def test_1500_tokens_looping_a_170_token_cycle_are_degenerate():
    record = record_of(looping(prefix=300, period=170))
    # The distinct 4-gram ratio alone missed it: a long cycle keeps the ratio well above its bound.
    assert record["distinct_4gram_ratio"] > 2 * DEGENERATE_DISTINCT_RATIO
    assert (record["repeat_period"], record["repeated_tail_tokens"]) == (170, 1200)
    assert is_degenerate([record])


def test_an_output_that_is_one_cycle_from_its_first_token_is_degenerate():
    # Up to the longest cycle that 1,500 tokens can repeat three times over.
    for period in (1, 150, 200, 500):
        record = record_of(looping(prefix=0, period=period))
        assert record["repeat_period"] == period
        assert is_degenerate([record]), period


def test_a_passage_written_twice_is_not_yet_a_loop():
    passage = varied_text(500, seed=5)
    record = record_of(varied_text(500, seed=4) + passage * 2)
    assert record["repeat_period"] == 500 and not is_degenerate([record])


def test_normal_varied_text_is_not_degenerate():
    records = [record_of(varied_text(OUTPUT_TOKENS, seed=seed)) for seed in range(5)]
    assert all(record["repeated_tail_tokens"] < 50 for record in records)
    assert not is_degenerate(records)
    assert not pooled_figures(records)["degenerate"]


def test_a_short_loop_at_the_very_end_is_not_degenerate():
    # Three repeats of a 20-token phrase closing 1,500 tokens of text: a tail, not a collapse.
    phrase = varied_text(20, seed=3)
    tokens = varied_text(OUTPUT_TOKENS - 60, seed=2) + phrase * 3
    record = record_of(tokens)
    assert record["repeat_period"] == 20 and record["repeated_tail_tokens"] >= 60
    assert not is_degenerate([record])


def test_one_looping_request_makes_the_run_degenerate():
    records = [record_of(varied_text(OUTPUT_TOKENS, seed=seed)) for seed in range(4)]
    records.append(record_of(looping(prefix=300, period=170)))
    assert is_degenerate(records) and pooled_figures(records)["degenerate"]


def test_an_early_stop_is_still_degenerate():
    record = record_of(varied_text(700, seed=1))
    assert record["stopped_early"] and is_degenerate([record])


def test_collapsed_output_is_still_degenerate():
    assert is_degenerate([record_of([42, 43, 44] * 500)])


def test_records_without_the_repeating_tail_are_judged_by_the_older_rules():
    record = record_of(looping(prefix=300, period=170))
    older = {k: v for k, v in record.items() if k not in ("repeat_period", "repeated_tail_tokens")}
    assert not is_degenerate([older])
    assert is_degenerate([older | {"stopped_early": True}])


def test_the_result_model_carries_the_fields_a_site_rederives_degenerate_from():
    record = record_of(looping(prefix=300, period=170))
    stored = RequestRecord.model_validate(
        {k: v for k, v in record.items() if k != "output_tokens"}
        | {"index": 0, "first_divergence": None}
    ).model_dump()
    assert is_degenerate([stored])
