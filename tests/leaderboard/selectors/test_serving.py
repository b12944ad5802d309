"""What a serving user weighs, read from stored concurrency results
(leaderboard.selectors.answers.serving): latency percentiles per level derived from the stored
requests, goodput at the objective asked for, and the throughput-per-GPU against tok/s-per-user
curves with their Pareto frontier."""

from __future__ import annotations

import statistics

import pytest

from leaderboard import selectors, services
from leaderboard.models import Run
from leaderboard.selectors.answers.serving import (
    POOLED_LABEL,
    concurrency_pareto,
    latency_by_level,
    point_latency,
    run_latency,
    tpot_objective,
)
from leaderboard.stored_results import StoredResult
from runner.stats import request_tpot_ms
from tests.support.protocol_results import concurrency_config
from tests.support.protocol_runs import LEVELS, import_streamed

pytestmark = pytest.mark.django_db


def series(hardware, objective: float = 50.0) -> dict:
    return selectors.concurrency_series(
        target_name="tiny-qwen3", hardware_slug=hardware.slug, tpot_ms_objective=objective
    )


def test_each_level_carries_percentiles_its_requests_give_and_itl_only_where_streamed(
    user, ranked_models, hardware, make_protocol_result
):
    mine, theirs = import_streamed(user, hardware, make_protocol_result)
    lines = {line["baseline"]: line for line in series(hardware)["lines"]}
    for row, level in zip(lines[False]["rows"], LEVELS, strict=True):
        requests = [r for r in mine if r["concurrency"] == level]
        latency = row["latency"]
        assert latency["tpot_ms"]["n"] == len(requests)
        assert latency["tpot_ms"]["p50"] == pytest.approx(
            statistics.median(request_tpot_ms(r) for r in requests)
        )
        # Every request's chunks but its first give one gap; half the gaps are a burst's 0.
        assert latency["itl_ms"]["n"] == sum(r["predicted_n"] - 1 for r in requests)
        assert (
            latency["itl_ms"]["p50"] == pytest.approx(0.0, abs=1e-3)
            or latency["itl_ms"]["p50"] < latency["itl_ms"]["p99"]
        )
        assert latency["e2e_ms"]["max"] == pytest.approx(max(r["wall_ms"] for r in requests))
    # The baseline was not streamed: no inter-token samples, the other figures all there.
    for row in lines[True]["rows"]:
        assert row["latency"]["itl_ms"]["n"] == 0 and row["latency"]["ttft_ms"]["n"] > 0


def test_goodput_is_judged_at_the_objective_asked_for(
    user, ranked_models, hardware, make_protocol_result
):
    mine, _ = import_streamed(user, hardware, make_protocol_result)
    tpots = sorted(request_tpot_ms(r) for r in mine if r["concurrency"] == 1)
    between = (tpots[0] + tpots[-1]) / 2 if tpots[0] != tpots[-1] else tpots[0]
    for objective in (tpots[0] / 2, between, tpots[-1] * 2):
        line = next(line for line in series(hardware, objective)["lines"] if not line["baseline"])
        goodput = line["rows"][0]["latency"]["goodput"]
        assert goodput["tpot_ms_objective"] == objective
        assert goodput["met"] == sum(1 for tpot in tpots if tpot <= objective)
        assert goodput["requests"] == len(tpots)


def test_the_pareto_curves_put_throughput_per_gpu_against_tok_s_per_user_level_by_level(
    user, ranked_models, hardware, make_protocol_result
):
    import_streamed(user, hardware, make_protocol_result)
    lines = series(hardware)["lines"]
    pareto = concurrency_pareto(lines=lines, hardware_slug=hardware.slug)
    assert pareto["gpu_count"] == 1 and len(pareto["curves"]) == 2
    for curve, line in zip(pareto["curves"], lines, strict=True):
        assert curve["key"] == line["key"] and curve["baseline"] == line["baseline"]
        assert [p["concurrency"] for p in curve["points"]] == LEVELS
        for point, row in zip(curve["points"], line["rows"], strict=True):
            assert point["per_gpu"] == pytest.approx(row["aggregate"])
            assert point["per_user"] == pytest.approx(1000.0 / row["latency"]["tpot_ms"]["p50"])


def test_the_frontier_holds_exactly_the_points_no_other_point_beats_on_both_axes(
    user, ranked_models, hardware, make_protocol_result
):
    import_streamed(user, hardware, make_protocol_result)
    pareto = concurrency_pareto(lines=series(hardware)["lines"], hardware_slug=hardware.slug)
    points = [p | {"key": c["key"]} for c in pareto["curves"] for p in c["points"]]

    def beaten(p):
        return any(
            q["per_user"] >= p["per_user"]
            and q["per_gpu"] >= p["per_gpu"]
            and (q["per_user"], q["per_gpu"]) != (p["per_user"], p["per_gpu"])
            for q in points
        )

    on = {(p["key"], p["concurrency"]) for p in pareto["frontier"]}
    assert on == {(p["key"], p["concurrency"]) for p in points if not beaten(p)}
    assert all(p["frontier"] == ((p["key"], p["concurrency"]) in on) for p in points)
    assert on, "a non-empty set of points has a frontier"


def test_throughput_per_gpu_divides_by_the_hardware_s_gpus(
    user, ranked_models, make_protocol_result
):
    pair = services.register_hardware(gpu_name="NVIDIA H200", gpu_count=2)
    import_streamed(user, pair, make_protocol_result)
    lines = series(pair)["lines"]
    pareto = concurrency_pareto(lines=lines, hardware_slug=pair.slug)
    assert pareto["gpu_count"] == 2
    point, row = pareto["curves"][0]["points"][0], lines[0]["rows"][0]
    assert point["per_gpu"] == pytest.approx(row["aggregate"] / 2)


def test_a_run_s_latency_has_a_row_per_point_and_one_for_all_its_requests(
    user, ranked_models, hardware, make_protocol_result
):
    mine, _ = import_streamed(user, hardware, make_protocol_result)
    run = Run.objects.get(config__key=concurrency_config(LEVELS).key)
    latency = run_latency(run_id=run.pk)
    assert [row["label"] for row in latency["rows"]] == [POOLED_LABEL] + [
        f"{level} concurrent" for level in LEVELS
    ]
    assert latency["rows"][0]["latency"]["tpot_ms"]["n"] == len(mine)
    assert latency["streamed"] is True and latency["objective_ms"] == 50.0


@pytest.mark.parametrize("text", ["", "abc", "nan", "inf", "-5", "0", "1e9", "9" * 40, None])
def test_an_objective_that_is_not_a_sane_positive_number_gives_the_default(text):
    assert tpot_objective(text) == 50.0


def test_a_sane_objective_is_taken():
    assert tpot_objective("20") == 20.0 and tpot_objective("0.5") == 0.5


def test_stored_requests_with_missing_or_hostile_values_are_read_around():
    hostile = {
        "points": [{"concurrency": 2}],
        "requests": [
            {"phase": "measure", "point": 0, "ttft_ms": "x", "wall_ms": 10.0, "predicted_n": 5},
            {"phase": "measure", "point": 0, "ttft_ms": 1.0, "wall_ms": float("nan")},
            {"phase": "measure", "point": 0, "ttft_ms": 2.0, "wall_ms": 42.0, "predicted_n": 5,
             "chunk_arrival_ms": [2.0, "a", None]},
            {"phase": "measure", "point": 0, "ttft_ms": -1.0, "wall_ms": 1e308, "predicted_n": 5,
             "chunk_arrival_ms": [5.0, 3.0]},
            "not a record",
            {"phase": "warmup", "point": 0, "ttft_ms": 1.0, "wall_ms": 2.0, "predicted_n": 5},
        ],
    }  # fmt: skip
    figures = latency_by_level(StoredResult.of_file(hostile))[2]
    assert figures["tpot_ms"]["n"] == 1 and figures["tpot_ms"]["p50"] == pytest.approx(10.0)
    assert figures["itl_ms"]["n"] == 0  # neither stream is whole and in order
    # NaN and a wall time past the result model's bound (1e15 ms) are no latency.
    assert figures["e2e_ms"]["n"] == 2 and figures["e2e_ms"]["max"] == 42.0
    assert point_latency(StoredResult.of_file({"requests": "nope"})) == {}
    assert point_latency(StoredResult.of_file(None)) == {}


def test_medians_carry_a_distribution_free_interval_where_the_samples_can_place_one(
    user, ranked_models, hardware, make_protocol_result
):
    import_streamed(user, hardware, make_protocol_result)
    line = next(line for line in series(hardware)["lines"] if not line["baseline"])
    for row in line["rows"]:
        itl, tpot = row["latency"]["itl_ms"], row["latency"]["tpot_ms"]
        # Every level has dozens of chunk gaps: the median is placed, within the interval.
        assert itl["p50_ci95_low"] <= itl["p50"] <= itl["p50_ci95_high"]
        # Two to eight requests a level: a median needs six, a p99 several hundred.
        placed = tpot["n"] >= 6
        assert (tpot["p50_ci95_low"] is not None) is placed and tpot["p99_ci95_low"] is None
    pareto = concurrency_pareto(lines=[line], hardware_slug=hardware.slug)
    point = pareto["curves"][0]["points"][-1]
    assert point["tpot_p50_ci95_low"] == line["rows"][-1]["latency"]["tpot_ms"]["p50_ci95_low"]


def line(key: str, ranking: str, points: list[tuple[float, float]], **fields) -> dict:
    """A concurrency line as `concurrency_series` gives it: per level (1, 2, ...) its median
    TPOT (ms) and aggregate tok/s."""
    rows = [
        {
            "concurrency": level,
            "aggregate": aggregate,
            "ci95_low": None,
            "ci95_high": None,
            "n": 3,
            "latency": {"tpot_ms": {"p50": tpot, "n": 6}},
        }
        for level, (tpot, aggregate) in enumerate(points, start=1)
    ]
    return {
        "key": key,
        "short_label": key,
        "baseline": False,
        "kept_off": False,
        "flags": [],
        "ranking_key": ranking,
        "ranking_label": f"workload {ranking}",
        "rows": rows,
    } | fields


def test_the_frontier_stays_in_one_ranking_and_never_takes_a_kept_off_row():
    lines = [
        line("baseline", "A", [(20.0, 40.0), (30.0, 60.0)], baseline=True),
        line("draft", "A", [(10.0, 50.0), (20.0, 90.0)]),
        # Synthetic acceptance: faster on both axes, but kept off the ranking.
        line("synthetic", "A", [(2.0, 900.0)], kept_off=True, flags=["synthetic"]),
        # Another workload's config, faster on both axes than every point of A.
        line("other-workload", "B", [(5.0, 500.0)]),
    ]
    pareto = concurrency_pareto(lines=lines, hardware_slug="no-such-gpu")
    assert pareto["ranking_label"] == "workload A" and pareto["other_ranking_curves"] == 1
    assert [curve["key"] for curve in pareto["curves"]] == ["baseline", "draft", "synthetic"]
    on = {(point["key"], point["concurrency"]) for point in pareto["frontier"]}
    assert on == {("draft", 1), ("draft", 2)}
    synthetic = next(curve for curve in pareto["curves"] if curve["key"] == "synthetic")
    assert synthetic["kept_off"] and not synthetic["points"][0]["frontier"]
