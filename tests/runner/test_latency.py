"""The latency a serving user weighs (runner.stats.latency_figures): percentiles from per-request
samples, time per output token, inter-token latency from streamed chunk arrivals, goodput at a
stated objective; and derive, don't trust (runner.evidence): a result whose latency claims
contradict its own requests, or whose latency fields are not finite, is refused in one line."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import numpy as np
import pytest

from runner.errors import ResultError
from runner.evidence import measured_requests
from runner.results import load_result
from runner.stats import (
    DEFAULT_TPOT_OBJECTIVE_MS,
    goodput,
    inter_token_gaps_ms,
    latency_figures,
    latency_percentiles,
    latency_samples,
    percentile,
    percentile_interval,
    request_tpot_ms,
    wilson_interval,
)

QUICK = Path(__file__).parents[2] / "docs" / "gpu-results" / "h200-run2" / "8b-nmax8.json"


def refusal(data: dict | str) -> str:
    with pytest.raises(ResultError) as caught:
        load_result(data)
    return str(caught.value)


@pytest.mark.parametrize("q", [0, 1, 50, 90, 99, 100])
def test_a_percentile_is_numpy_s_linear_interpolation_between_closest_ranks(q):
    rng = random.Random(q)
    for size in (1, 2, 3, 10, 101):
        values = [rng.expovariate(1 / 20.0) for _ in range(size)]
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentiles_of_no_values_are_all_none_and_of_some_never_decrease():
    assert latency_percentiles([]) == {
        "n": 0, "mean": None, "p50": None, "p90": None, "p99": None, "max": None
    }  # fmt: skip
    figures = latency_percentiles([5.0, 1.0, 3.0, 100.0, 2.0])
    assert figures["n"] == 5 and figures["max"] == 100.0 and figures["p50"] == 3.0
    assert figures["p50"] <= figures["p90"] <= figures["p99"] <= figures["max"]
    # One slow request of five moves the tail, not the median.
    assert figures["p99"] > 90.0 and figures["mean"] == pytest.approx(22.2)


def test_tpot_is_the_time_after_the_first_token_over_the_tokens_after_it():
    record = {"ttft_ms": 100.0, "wall_ms": 1100.0, "predicted_n": 101}
    assert request_tpot_ms(record) == pytest.approx(10.0)
    assert request_tpot_ms(record | {"predicted_n": 1}) is None
    assert request_tpot_ms(record | {"ttft_ms": None}) is None


def test_inter_token_latency_is_the_gap_between_successive_chunks_so_a_burst_gives_zeros():
    # A verify step yielding three tokens sends three chunks at once: two gaps of ~0.
    record = {"chunk_arrival_ms": [50.0, 70.0, 70.0, 70.0, 90.0]}
    assert inter_token_gaps_ms(record) == [20.0, 0.0, 0.0, 20.0]
    assert inter_token_gaps_ms({"chunk_arrival_ms": None}) == []
    assert inter_token_gaps_ms({}) == []


def test_goodput_counts_the_requests_meeting_the_stated_objective_with_a_wilson_interval():
    records = [
        {"ttft_ms": 10.0, "wall_ms": 10.0 + 99 * tpot, "predicted_n": 100}
        for tpot in (20.0, 30.0, 49.0, 50.0, 51.0, 80.0)
    ]
    found = goodput(records)
    assert found["tpot_ms_objective"] == DEFAULT_TPOT_OBJECTIVE_MS == 50.0
    assert (found["met"], found["requests"]) == (4, 6)
    assert found["share"] == pytest.approx(4 / 6)
    assert found["ci95_low"] < 4 / 6 < found["ci95_high"]
    assert goodput(records, tpot_ms_objective=25.0)["met"] == 1
    with pytest.raises(ValueError):
        goodput(records, tpot_ms_objective=float("nan"))
    with pytest.raises(ValueError):
        goodput(records, tpot_ms_objective=0.0)


def test_the_wilson_interval_matches_its_textbook_values():
    low, high = wilson_interval(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert wilson_interval(0, 0) == (None, None)
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0)


def test_latency_of_whole_responses_has_no_inter_token_samples():
    records = [{"ttft_ms": 5.0, "wall_ms": 105.0, "predicted_n": 11, "chunk_arrival_ms": None}]
    figures = latency_figures(records)
    assert figures["itl_ms"]["n"] == 0 and figures["itl_ms"]["p99"] is None
    assert figures["tpot_ms"]["p50"] == pytest.approx(10.0)
    assert figures["e2e_ms"]["max"] == 105.0


# --- The door: runner.evidence --------------------------------------------------------------


def streamed_result() -> dict:
    """The stored H200 quick result, its requests given chunk arrivals within their clocks and
    its summary and point the latency figures those requests give."""
    data = json.loads(QUICK.read_text())
    for record in data["requests"]:
        ttft, wall, n = record["ttft_ms"], record["wall_ms"], record["predicted_n"]
        step = (wall - 1.0 - ttft) / (n - 1)
        # Tokens in bursts of two (a verify step), as speculative decoding streams them.
        record["chunk_arrival_ms"] = [ttft + step * (i - i % 2) for i in range(n)]
        record["tpot_ms"] = request_tpot_ms(record)
    records = measured_requests(data["requests"])
    data["summary"]["latency"] = latency_figures(records)
    data["points"][0]["latency"] = latency_figures(records)
    return data


def test_a_result_whose_latency_its_requests_give_loads_and_keeps_it():
    result = load_result(streamed_result())
    latency = result.points[0].latency
    assert latency is not None and latency.itl_ms.n == sum(
        len(r.chunk_arrival_ms or []) - 1 for r in result.requests
    )
    # Half the gaps are 0 (the second token of each burst).
    assert latency.itl_ms.p50 is not None and latency.itl_ms.p50 < latency.itl_ms.p90


def test_a_claimed_p99_that_contradicts_the_requests_is_refused_naming_the_figure():
    data = streamed_result()
    derived = data["points"][0]["latency"]["itl_ms"]["p99"]
    data["points"][0]["latency"]["itl_ms"]["p99"] = derived / 2
    data["points"][0]["latency"]["itl_ms"]["p90"] = min(
        data["points"][0]["latency"]["itl_ms"]["p90"], derived / 2
    )
    data["points"][0]["latency"]["itl_ms"]["p50"] = 0.0
    message = refusal(data)
    assert "points.0.latency.itl_ms" in message and "measured requests give" in message


def test_a_summary_ttft_p99_below_the_requests_is_refused():
    data = streamed_result()
    data["summary"]["latency"]["ttft_ms"]["p99"] = data["summary"]["latency"]["ttft_ms"]["p90"]
    assert "summary.latency.ttft_ms.p99" in refusal(data)


def test_a_claimed_goodput_is_checked_at_the_objective_it_states():
    data = streamed_result()
    # At 1 ms every request misses: a claim that all met is refused, the true one loads.
    data["summary"]["latency"]["goodput"] |= {"tpot_ms_objective": 1.0}
    assert "summary.latency.goodput" in refusal(data)
    data["summary"]["latency"]["goodput"] = goodput(
        measured_requests(data["requests"]), tpot_ms_objective=1.0
    )
    assert load_result(data).summary.latency.goodput.met == 0


def test_a_request_whose_chunks_do_not_fit_its_clocks_or_whose_tpot_is_not_its_own_is_refused():
    cases = {
        "decreasing": lambda r: r["chunk_arrival_ms"].reverse(),
        "after the end": lambda r: r["chunk_arrival_ms"].__setitem__(-1, r["wall_ms"] * 2),
        "not the ttft": lambda r: r.__setitem__("ttft_ms", r["chunk_arrival_ms"][0] + 5.0),
        "tpot": lambda r: r.__setitem__("tpot_ms", r["tpot_ms"] * 0.5),
        "more chunks than tokens": lambda r: r["chunk_arrival_ms"].extend([r["wall_ms"]] * 300),
    }
    for name, change in cases.items():
        data = streamed_result()
        change(data["requests"][0])
        message = refusal(data)
        assert message.startswith("invalid result: requests.0"), (name, message)


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("tpot_ms", "NaN"),
        ("tpot_ms", "-3.0"),
        ("tpot_ms", "1e300"),
        ("chunk_arrival_ms", "[1.0, NaN]"),
        ("chunk_arrival_ms", "[-1.0]"),
        ("chunk_arrival_ms", "[Infinity]"),
    ],
)
def test_non_finite_negative_or_huge_latency_fields_are_refused_in_one_clear_line(where, value):
    data = streamed_result()
    data["requests"][0][where] = "__HOSTILE__"
    text = json.dumps(data).replace('"__HOSTILE__"', value)
    message = refusal(text)
    assert message.startswith(f"invalid result: requests.0.{where}")
    assert "\n" not in message


def test_hostile_percentiles_in_a_summary_are_refused():
    for bad in (float("nan"), -1.0, 1e300):
        data = streamed_result()
        data["summary"]["latency"]["e2e_ms"]["max"] = bad
        text = json.dumps(data)  # NaN as the JSON token NaN
        assert "summary.latency.e2e_ms.max" in refusal(text)
    data = copy.deepcopy(streamed_result())
    data["summary"]["latency"]["goodput"]["met"] = 10**9
    assert "summary.latency.goodput.met" in refusal(data)


def test_a_percentile_s_interval_is_the_order_statistics_of_binomial_coverage():
    # Conover's table: the median of 100 values lies between the 40th and 61st at 95%.
    assert percentile_interval(list(range(1, 101)), 50) == (40.0, 61.0)
    # Five values cannot place a median at 95% (each tail 1/32 > 2.5%), six can (1/64 each).
    assert percentile_interval([1.0, 2.0, 3.0, 4.0, 5.0], 50) == (None, None)
    assert percentile_interval([6.0, 1.0, 5.0, 2.0, 4.0, 3.0], 50) == (1.0, 6.0)
    # p99 needs several hundred values.
    assert percentile_interval(list(range(300)), 99) == (None, None)
    low, high = percentile_interval(list(range(1000)), 99)
    assert low <= percentile(list(range(1000)), 99) <= high


def test_the_interval_covers_the_true_percentile_about_95_times_in_100():
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(400):
        low, high = percentile_interval(rng.exponential(10.0, size=60).tolist(), 90)
        covered += low <= 10.0 * np.log(10.0) <= high  # the exponential's true p90
    assert 0.93 <= covered / 400 <= 0.995


def test_the_latency_samples_are_the_ones_the_figures_are_computed_from():
    records = [
        {"ttft_ms": 5.0, "wall_ms": 105.0, "predicted_n": 11, "chunk_arrival_ms": [5.0, 6.0]},
        {"ttft_ms": None, "wall_ms": 50.0, "predicted_n": 11},
    ]
    samples = latency_samples(records)
    assert samples == {
        "ttft_ms": [5.0],
        "tpot_ms": [10.0],
        "itl_ms": [1.0],
        "e2e_ms": [105.0, 50.0],
    }
    figures = latency_figures(records)
    assert all(figures[name]["n"] == len(values) for name, values in samples.items())
