"""Summary statistics (runner.stats): the Student-t interval, pooled figures, per-depth points."""

import math

import pytest

from runner.config import parse_config
from runner.stats import depth_points, pooled_figures, summarize, t_critical_95


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
