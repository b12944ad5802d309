"""The plain lists behind the charts (selectors.evidence.charts): n_max series of one ranking
against their own paired baseline, from ranked rows only, their findings by the board's own test;
each depth against the paired baseline at that depth, context lines grouped by target and
hardware, and speedup against concurrency at the levels that have a baseline."""

from __future__ import annotations

import json
import re

import pytest

from leaderboard import services
from leaderboard.models import Hardware, LeaderboardEntry, Run
from leaderboard.selectors.evidence.charts import concurrency_speedup_lines, context_groups
from runner.pairing import combined_speedup
from tests.support.board_rows import QUICK_END_TO_END
from tests.support.board_rows import board_row as row
from tests.support.h200_results import RESULTS_DIR, load_h200_results
from tests.support.pages import embedded, rank_labels, ranking, text
from tests.support.seed_kit import SEED_CSV


@pytest.fixture
def gpu(db) -> Hardware:
    return Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")


def nmax_rows(hardware: Hardware, points, **common) -> list[LeaderboardEntry]:
    return [
        row(hardware, f"dflash n_max {n_max}", tps, spec_label="draft-dflash", n_max=n_max,
            acceptance_rate=acceptance, half=half, n=n, **common)
        for n_max, tps, half, n, acceptance in points
    ]  # fmt: skip


def test_the_nmax_findings_and_the_boards_ties_use_one_test(client, gpu):
    nmax_rows(
        gpu,
        [
            (12, 400.0, 10.0, 5, 0.45),  # the fastest: interval 390-410
            (2, 350.0, 60.0, 5, 0.90),  # wide: Welch cannot tell it from n_max 12 (p 0.08)
            (1, 300.0, 10.0, 5, 0.95),  # clearly slower: 290-310
            (4, 380.0, 0.0, 1, 0.80),  # one request: no interval, neither tie nor loss
        ],
    )

    nmax = text(client.get("/nmax/", {"target": "target", "hardware": gpu.slug}))
    board = text(client.get("/"))

    (finding,) = re.findall(r'<p class="finding"[^>]*>(.*?)</p>', nmax)
    assert "n_max 12 at 45% acceptance reaches 400.0" in finding
    assert "faster than n_max 1 at 95% (300.0 tok/s)" in finding
    assert "n_max 2" not in finding and "n_max 4" not in finding
    assert re.search(r'<td class="num">2 <span class="badge tie"[^>]*>indistinguishable from', nmax)
    assert not re.search(r'<td class="num">4 <span class="badge tie"', nmax)
    # The board, by the same test: n_max 2 is labelled like its leader (its rank stays its
    # place by tok/s), the one-request row has no interval to be compared by.
    assert [(rank, label) for rank, _, label in ranking(board)] == [
        ("1", "dflash n_max 12"),
        ("2", "dflash n_max 4"),
        ("3", "dflash n_max 2"),
        ("4", "dflash n_max 1"),
    ]
    assert rank_labels(board) == {
        "dflash n_max 12": "",
        "dflash n_max 4": "no interval",
        "dflash n_max 2": "≈ leader",
        # Clearly slower than the leader, yet not told apart from the wide row above it.
        "dflash n_max 1": "≈ row above",
    }


def test_the_nmax_page_answers_from_ranked_rows_and_labels_a_series_by_its_definition(client, gpu):
    report = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000"
    )
    seed_page = text(
        client.get("/nmax/", {"target": "qwen3.6-27B", "hardware": report.hardware.slug})
    )
    # The seed kit's self-reported numbers rank nowhere, so no n_max of theirs is crowned.
    assert "No results with an n_max" in seed_page and 'id="nmax-data"' not in seed_page

    nmax_rows(gpu, [(4, 200.0, 5.0, 5, 0.7), (8, 150.0, 5.0, 5, 0.6)], tps_definition="end-to-end")
    page = text(client.get("/nmax/", {"target": "target", "hardware": gpu.slug}))

    data = embedded(page, "nmax-data")
    assert {t["definition"] for t in data["types"]} == {"end-to-end"}
    assert data["definitions"] == ["end-to-end"]
    assert "End-to-end tok/s</th>" in page and "Decode tok/s</th>" not in page
    assert [t["ranking"] for t in data["types"]] == [QUICK_END_TO_END]
    assert data["types"][0]["best_n_max"] == 4


def test_an_nmax_series_keeps_to_one_protocol_and_its_own_paired_baseline(client, gpu):
    quick_baseline = row(gpu, "baseline quick", 50.0, spec_label="none", protocol="quick")
    depth = {"protocol": {"name": "depth", "depths": [4096]}}
    depth_baseline = row(
        gpu, "baseline depth", 20.0, spec_label="none", protocol="depth", canonical=depth
    )
    for n_max, tps in ((2, 120.0), (8, 150.0)):
        row(gpu, f"quick {n_max}", tps, spec_label="draft-dflash", n_max=n_max,
            baseline=quick_baseline.config, baseline_entry=quick_baseline)  # fmt: skip
        row(gpu, f"depth {n_max}", tps / 3, spec_label="draft-dflash", n_max=n_max,
            protocol="depth", canonical=depth, baseline=depth_baseline.config,
            baseline_entry=depth_baseline)  # fmt: skip

    data = embedded(
        text(client.get("/nmax/", {"target": "target", "hardware": gpu.slug})), "nmax-data"
    )

    by_protocol = {series["protocol"]: series for series in data["types"]}
    assert set(by_protocol) == {"quick", "depth 4096 tokens"}
    assert by_protocol["quick"]["tokens_per_second"] == [120.0, 150.0]
    assert by_protocol["quick"]["baseline"]["tokens_per_second"] == 50.0
    assert by_protocol["depth 4096 tokens"]["baseline"]["tokens_per_second"] == 20.0
    assert (
        by_protocol["depth 4096 tokens"]["ranking"]
        == "depth 4096 tokens · decode tok/s · GPU A · b11434"
    )


def test_an_nmax_series_draws_no_baseline_from_another_depth(client, gpu):
    # An n_max sweep at depth 512 measured without a baseline, and a 4-depth run with its own.
    sweep = {"protocol": {"name": "depth", "depths": [512], "output_tokens": 256}}
    depths = {"protocol": {"name": "depth", "depths": [512, 4096, 12288, 36864],
                           "output_tokens": 256}}  # fmt: skip
    for n_max, tps in ((4, 350.0), (12, 400.0)):
        row(gpu, f"sweep {n_max}", tps, spec_label="draft-dflash", n_max=n_max,
            protocol="depth", canonical=sweep)  # fmt: skip
    baseline = row(gpu, "baseline", 180.0, spec_label="none", protocol="depth", canonical=depths)
    row(gpu, "depths 15", 385.0, spec_label="draft-dflash", n_max=15, protocol="depth",
        canonical=depths, baseline=baseline.config, baseline_entry=baseline)  # fmt: skip

    page = text(client.get("/nmax/", {"target": "target", "hardware": gpu.slug}))
    by_protocol = {series["protocol"]: series for series in embedded(page, "nmax-data")["types"]}

    # The only baseline measured is the 4-depth run's, at other contexts: it is that run's
    # baseline, never the sweep's.
    assert by_protocol["depth 512 tokens, 256 out"]["baseline"] is None
    depth_run = by_protocol["depth 512–36864 tokens (4 depths), 256 out"]
    assert depth_run["n_max"] == [15] and depth_run["baseline"]["tokens_per_second"] == 180.0
    assert "No single paired baseline for this series" in page


@pytest.fixture
def h200(user, hardware) -> list[Run]:
    return load_h200_results(owner=user, hardware=hardware)


def test_depth_runs_show_each_depth_against_the_paired_baseline_at_that_depth(client, h200):
    data = embedded(text(client.get("/context/")), "context-data")
    line = next(line for line in data["lines"] if line["label"].startswith("qwen3-8b"))
    # The expected figures straight from the runner's result file, its own baseline included.
    result = json.loads((RESULTS_DIR / "8b-dflash15-depth.json").read_text())
    points = {p["input_tokens"]: p for p in result["points"]}
    baseline = {p["input_tokens"]: p for p in result["baseline"]["points"]}
    assert Run.objects.get(pk=line["run_id"]).config.key == result["config_key"]

    for depth, speedup in zip(line["depths"], line["speedup"], strict=True):
        expected = (
            points[depth]["decode_tokens_per_second"]["mean"]
            / baseline[depth]["decode_tokens_per_second"]["mean"]
        )
        assert speedup == pytest.approx(expected)
    # Across depths: the geometric mean, as the runner combined them in its own summary.
    assert line["speedup_across_depths"] == pytest.approx(combined_speedup(line["speedup"]))
    assert line["speedup_across_depths"] == pytest.approx(result["summary"]["speedup"])
    assert all(n == 2 for n in line["n"]) and all(low is not None for low in line["ci95_low"])


def concurrency_line(key: str, *, baseline: bool, speedups: list[float | None]) -> dict:
    rows = [
        {
            "concurrency": level,
            "speedup": speedup,
            "speedup_ci95_low": None if speedup is None else speedup - 0.1,
            "speedup_ci95_high": None if speedup is None else speedup + 0.1,
            "verdict": "" if speedup is None else ("faster" if speedup > 1.1 else "slower"),
        }
        for level, speedup in zip([1, 2, 4], speedups, strict=True)
    ]
    return {"key": key, "short_label": f"config {key}", "baseline": baseline, "rows": rows}


def test_speedup_against_concurrency_keeps_speculative_levels_that_have_a_baseline():
    lines = [
        concurrency_line("base", baseline=True, speedups=[None, None, None]),
        concurrency_line("spec", baseline=False, speedups=[1.6, None, 0.8]),
        concurrency_line("unpaired", baseline=False, speedups=[None, None, None]),
    ]

    [line] = concurrency_speedup_lines(lines=lines)

    assert line["key"] == "spec" and line["levels"] == [1, 4]
    assert line["speedup"] == [1.6, 0.8]
    assert line["ci95_low"] == pytest.approx([1.5, 0.7])
    assert line["verdicts"] == ["faster", "slower"]


def test_context_lines_are_grouped_one_chart_per_target_and_hardware():
    lines = [
        {"target_name": "b", "hardware_slug": "h200", "gpu_name": "H200"},
        {"target_name": "a", "hardware_slug": "h200", "gpu_name": "H200"},
        {"target_name": "b", "hardware_slug": "h200", "gpu_name": "H200"},
        {"target_name": "b", "hardware_slug": "2x-h200", "gpu_name": "H200"},
    ]

    groups = context_groups(lines)

    assert [(g["target_name"], g["lines"]) for g in groups] == [
        ("a", [1]),
        ("b", [0, 2]),
        ("b", [3]),
    ]
