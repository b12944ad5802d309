"""The front page's speedup chart, the /hardware/ GPU comparison, and what a run's page says it
measured: memory in the right unit and kind, and a llama-server command that runs when pasted."""

from __future__ import annotations

import html
import json
import math
import os
import re
import statistics
import subprocess

import pytest
from scipy import stats as scipy_stats

from leaderboard import selectors, services, verdicts
from leaderboard.models import LeaderboardEntry, Run
from leaderboard.services.board import mark_test_weights
from leaderboard.templatetags.run_display import memory_text, runnable
from leaderboard.verdicts.statistics import Sample, ratio_interval, t_critical
from tests.support.baselines import with_baseline_section
from tests.support.measured_configs import draft_simple, measure


@pytest.fixture
def real_weights(models):
    """The tiny models cleared of their test-weights mark, as an admin could: only rows of
    real weights compete, and these tests are about what competes."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


@pytest.fixture
def board(user, real_weights, hardware, enqueued, make_result) -> dict:
    """Three measured draft-simple configs against one paired baseline of [50, 52] tok/s."""
    jobs = {
        n_max: measure(user, hardware, make_result, n_max, decode)
        for n_max, decode in ((4, [100.0, 104.0]), (3, [99.0, 103.0]), (2, [60.0, 60.5]))
    }
    return {"jobs": jobs, "hardware": hardware}


def embedded(page: str, element_id: str):
    match = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    return json.loads(html.unescape(match.group(1))) if match else None


# The speedup interval --------------------------------------------------------------------------
# Decided by the verdicts when a run is recorded (`verdicts.statistics.ratio_interval` for one
# batch against its baseline batch) and stored on the row (speedup_ci95_low/high, speedup_basis).


def test_the_speedup_interval_is_the_delta_method_on_the_log_ratio_with_welch_df():
    mean, stdev, n, base_mean, base_stdev, base_n = 102.0, 2.83, 2, 51.0, 1.41, 2
    own, base = (stdev / mean) ** 2 / n, (base_stdev / base_mean) ** 2 / base_n
    df = (own + base) ** 2 / (own**2 / (n - 1) + base**2 / (base_n - 1))
    half = scipy_stats.t.ppf(0.975, df) * math.sqrt(own + base)
    low, high = ratio_interval(Sample(mean, stdev, n), Sample(base_mean, base_stdev, base_n))
    assert low == pytest.approx(2.0 * math.exp(-half)) and high == pytest.approx(
        2.0 * math.exp(half)
    )
    assert low < 2.0 < high and low > 0
    # A fractional df is scipy's own t, between its whole neighbours (no table, no jump).
    assert t_critical(2) < t_critical(1.9) < t_critical(1)
    assert t_critical(1.99) == pytest.approx(t_critical(2), rel=0.01)


def test_a_speedup_has_no_interval_with_fewer_than_two_requests_or_a_missing_figure():
    baseline = Sample(50.0, 1.0, 5)
    assert ratio_interval(Sample(100.0, None, 1), baseline) is None
    assert ratio_interval(Sample(100.0, 1.0, 5), Sample(50.0, None, 5)) is None
    assert ratio_interval(None, baseline) is None
    assert ratio_interval(Sample(100.0, 0.0, 3), Sample(50.0, 0.0, 3)) == (2.0, 2.0)


def test_a_row_interval_is_taken_against_the_baseline_batch_it_is_paired_with(board):
    entry = LeaderboardEntry.objects.get(config=board["jobs"][4].config)
    low, high = entry.speedup_ci95_low, entry.speedup_ci95_high
    assert verdicts.speedup_interval(entry) == (low, high)
    assert entry.speedup_basis == "requests"  # one batch: its requests against its baseline's
    # The same spread a request further off: about as wide (no jump in t at a whole df).
    near = LeaderboardEntry.objects.get(config=board["jobs"][3].config)
    assert near.speedup_ci95_high / near.speedup_ci95_low == pytest.approx(high / low, rel=0.02)
    assert entry.speedup == pytest.approx(102.0 / 51.0)
    assert low < entry.speedup < high
    # From the batches themselves: [100, 104] over the baseline's [50, 52], two requests each
    # (Welch df 2.0, t = 4.303).
    own = (statistics.stdev([100.0, 104.0]) / 102.0) ** 2 / 2
    base = (statistics.stdev([50.0, 52.0]) / 51.0) ** 2 / 2
    half = 4.302652729911275 * math.sqrt(own + base)
    assert (low, high) == pytest.approx((2.0 * math.exp(-half), 2.0 * math.exp(half)))


def test_a_row_measured_in_several_batches_carries_the_interval_of_its_batch_speedups(
    board, user, make_result
):
    # n_max 4 again, a little faster: two batches, each with its own baseline batch.
    again = measure(user, board["hardware"], make_result, 4, [110.0, 114.0])
    entry = LeaderboardEntry.objects.get(config=again.config)
    speedups = [102.0 / 51.0, 112.0 / 51.0]
    logs = [math.log(value) for value in speedups]
    half = scipy_stats.t.ppf(0.975, 1) * statistics.stdev(logs) / math.sqrt(2)
    center = math.exp(statistics.fmean(logs))

    assert entry.speedup_basis == "batch speedups"
    assert (entry.speedup_ci95_low, entry.speedup_ci95_high) == pytest.approx(
        (center * math.exp(-half), center * math.exp(half))
    )
    # The chart draws the interval the row stores.
    [point] = [p for p in selectors.speedup_chart()["points"] if p["key"] == again.config.key]
    assert (point["ci95_low"], point["ci95_high"]) == (
        entry.speedup_ci95_low,
        entry.speedup_ci95_high,
    )
    assert point["interval_basis"] == "batch speedups"


# The front page's chart ------------------------------------------------------------------------


def test_the_front_page_embeds_a_speedup_chart_of_the_ranked_configs(client, board):
    page = client.get("/").content.decode()
    assert page.index('id="speedup-chart"') < page.index('id="ranking"')
    chart = embedded(page, "speedup-data")
    assert chart["target"] == "tiny-qwen3" and chart["hardware"] == board["hardware"].slug
    assert chart["definition"] == "decode"
    assert chart["other_ranking_rows"] == 0 and chart["other_rankings"] == 0
    assert chart["ranking_label"].endswith("· decode tok/s · H200 · b11434")
    speedups = [point["speedup"] for point in chart["points"]]
    assert speedups == pytest.approx([102 / 51, 101 / 51, 60.25 / 51])
    for point in chart["points"]:
        assert point["ci95_low"] < point["speedup"] < point["ci95_high"]
        assert point["label"].startswith("draft-simple · n_max ")
    assert "leaderboard/vendor/chart.umd.min.js" in page and "leaderboard/charts.js" in page
    assert "<script>" not in page  # no inline scripts: the data is JSON, charts.js draws it


def test_the_chart_follows_the_selected_target_and_hardware(client, board, user, make_result):
    other = services.register_hardware(gpu_name="NVIDIA RTX 4090", memory_bytes=24 * 2**30)
    measure(user, other, make_result, 4, [70.0, 71.0])
    chart = embedded(client.get(f"/?hardware={other.slug}").content.decode(), "speedup-data")
    assert chart["hardware"] == other.slug and len(chart["points"]) == 1
    assert chart["chosen"] == {"target": False, "hardware": True}
    # Nothing chosen: the pair with the most speedups.
    assert (
        embedded(client.get("/").content.decode(), "speedup-data")["hardware"]
        == board["hardware"].slug
    )


def measure_on_prompt(user, hardware, make_result, n_max: int, decode: list[float], prompt: str):
    """A draft-simple config measured on a quick protocol with its own prompt (another workload,
    so another ranking), with its baseline on that prompt."""
    data = draft_simple(n_max) | {
        "protocol": {"name": "quick", "n_predict": 64, "runs": 3, "prompt": prompt}
    }
    job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, decode, draft=(40, 30), tau=2.2),
            make_result(job.config.baseline.key, [50.0, 52.0]),
        ),
    )
    return job


def test_test_weights_degenerate_and_other_ranking_rows_stay_off_the_chart(
    client, board, user, make_result
):
    fastest = LeaderboardEntry.objects.get(config=board["jobs"][4].config)
    LeaderboardEntry.objects.filter(pk=fastest.pk).update(degenerate=True)
    # Faster than every row, but on another prompt: another ranking, never drawn beside them.
    elsewhere = measure_on_prompt(
        user, board["hardware"], make_result, 4, [300.0, 304.0], "a a a a a a a a"
    )
    services.raise_board_version()
    chart = selectors.speedup_chart()
    assert [p["key"] for p in chart["points"]] == [
        board["jobs"][3].config.key,
        board["jobs"][2].config.key,
    ]
    assert elsewhere.config.key not in {p["key"] for p in chart["points"]}
    assert chart["other_ranking_rows"] == 1 and chart["other_rankings"] == 1

    mark_test_weights(models=[board["jobs"][3].config.target], test_weights=True)
    assert selectors.speedup_chart() is None
    page = client.get("/").content.decode()
    assert 'id="speedup-chart"' not in page and embedded(page, "speedup-data") is None


def test_a_board_without_speedups_has_no_chart_and_still_shows(
    client, user, real_weights, hardware
):
    assert selectors.speedup_chart() is None
    response = client.get("/?target=nothing-like-it&hardware=nor-this")
    assert response.status_code == 200 and 'id="speedup-chart"' not in response.content.decode()


# /hardware/: GPUs compared for a target --------------------------------------------------------


def test_the_hardware_page_compares_gpus_for_a_target(client, board, user, make_result):
    other = services.register_hardware(gpu_name="NVIDIA RTX 4090", memory_bytes=24 * 2**30)
    measure(user, other, make_result, 4, [70.0, 71.0])
    page = client.get("/hardware/").content.decode()
    data = embedded(page, "hardware-comparison-data")
    # The workload's query value is Config.workload (the protocol and its parameters).
    workload = board["jobs"][4].config.workload
    assert data["target"] == "tiny-qwen3" and data["protocol"] == workload
    row = LeaderboardEntry.objects.get(config=board["jobs"][4].config, hardware=board["hardware"])
    assert workload.startswith("quick:") and data["workload"] == row.workload_label
    assert data["workload"].startswith("quick, ") and "prompt “" in data["workload"]
    rows = {row["slug"]: row for row in data["rows"]}
    assert [row["slug"] for row in data["rows"]] == [board["hardware"].slug, other.slug]
    h200 = rows[board["hardware"].slug]
    assert h200["tokens_per_second"] == pytest.approx(102.0)
    assert h200["ci95_low"] < 102.0 < h200["ci95_high"] and h200["interval_basis"] == "requests"
    assert h200["speedup"] == pytest.approx(102 / 51)
    assert h200["speedup_ci95_low"] < h200["speedup"] < h200["speedup_ci95_high"]
    assert rows[other.slug]["speedup"] == pytest.approx(70.5 / 51)
    assert 'id="gpu-comparison-table"' in page and 'data-chart-kind="speedup"' in page
    assert page.count('data-chart-source="hardware-comparison-data"') == 2


def test_the_hardware_comparison_falls_back_for_unknown_choices_and_empty_boards(client, board):
    data = embedded(
        client.get("/hardware/?target=%00nope&protocol=<b>").content.decode(),
        "hardware-comparison-data",
    )
    workload = board["jobs"][4].config.workload
    assert data["target"] == "tiny-qwen3" and data["protocol"] == workload
    # A bare protocol name picks that protocol's widest workload.
    bare = client.get("/hardware/?protocol=quick").content.decode()
    assert embedded(bare, "hardware-comparison-data")["protocol"] == workload
    LeaderboardEntry.objects.update(test_weights=True)
    page = client.get("/hardware/").content.decode()
    assert "No ranked decode results to compare GPUs on yet." in page


# What a run measured: memory, and a command that runs ------------------------------------------


def test_memory_reads_in_mib_below_a_gib_and_not_at_all_when_nothing_was_measured():
    assert memory_text(312 * 2**20) == "312.0 MiB"
    assert memory_text(3 * 2**30) == "3.0 GiB"
    assert memory_text(0) == "" and memory_text(None) == "" and memory_text(True) == ""


def test_a_cpu_runs_page_says_process_memory_and_shows_no_gpu_memory_chart(
    client, user, real_weights, hardware, enqueued, make_result
):
    job = measure(user, hardware, make_result, 4, [100.0, 104.0])
    run = job.run
    config_page = client.get(f"/configs/{job.config.key}/").content.decode()
    assert 'id="memory-chart"' in config_page  # GPU memory on both sides: the trade-off chart
    assert "117.7 MiB GPU memory" in config_page

    Run.objects.update(memory_kind="process", peak_memory_bytes=300 * 2**20)
    services.raise_board_version()
    run_page = client.get(f"/runs/{run.pk}/").content.decode()
    assert '<dd id="peak-memory">300.0 MiB process memory</dd>' in run_page
    config_page = client.get(f"/configs/{job.config.key}/").content.decode()
    assert 'id="memory-chart"' not in config_page and "extra GPU memory" not in config_page

    Run.objects.update(peak_memory_bytes=0)
    run_page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Peak memory" not in run_page and "0.0 GiB" not in run_page


def test_the_command_gets_the_library_path_of_a_built_engines_binary():
    command = "/root/.cache/specboard/engines/b1-cpu/bin/llama-server -m '/m/a b.gguf' --port 8"
    assert runnable(command) == (
        "LD_LIBRARY_PATH=/root/.cache/specboard/engines/b1-cpu/bin " + command
    )
    assert runnable("llama-server -m a.gguf") == "llama-server -m a.gguf"  # found on PATH
    assert runnable("/odd dir/llama-server") == "/odd dir/llama-server"  # not one word
    assert (
        runnable("'/odd dir/llama-server' -m x")
        == "LD_LIBRARY_PATH='/odd dir' '/odd dir/llama-server' -m x"
    )
    assert runnable("unbalanced 'quote") == "unbalanced 'quote"


@pytest.mark.engine
def test_the_command_on_a_config_page_starts_llama_server_when_pasted_into_a_shell(
    client, user, real_weights, hardware, enqueued, make_result, tiny_models
):
    from runner.config import BenchmarkConfig
    from runner.engines.build import locate
    from runner.engines.server import display_command, server_argv
    from runner.errors import EngineBuildError

    try:
        engine = locate(build_if_missing=False)
    except EngineBuildError:
        pytest.skip("no cached llama-server build")
    job = measure(user, hardware, make_result, 4, [100.0, 104.0])
    config = BenchmarkConfig.from_canonical(job.config.canonical)
    argv = server_argv(
        config,
        engine=engine,
        target_path=tiny_models["tiny-qwen3.gguf"],
        draft_path=None,
        port=18123,
    )
    # The command exactly as the runner records it in a result's provenance.
    Run.objects.filter(pk=job.run.pk).update(
        provenance=job.run.provenance | {"argv": argv, "command": display_command(argv)}
    )
    page = client.get(f"/configs/{job.config.key}/").content.decode()
    shown = html.unescape(re.search(r'<pre id="server-command">(.*?)</pre>', page, re.S).group(1))
    assert shown.startswith("LD_LIBRARY_PATH=")
    environment = {key: value for key, value in os.environ.items() if key != "LD_LIBRARY_PATH"}
    pasted = subprocess.run(  # noqa: S602 - the point: the page's text, as a person pastes it
        shown + " --version",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )
    assert pasted.returncode == 0, pasted.stderr
    assert "version" in (pasted.stdout + pasted.stderr)
    # Without the prefix it fails the way the issue reports: the shared library is not found.
    bare = subprocess.run(  # noqa: S602
        display_command(argv) + " --version", shell=True, capture_output=True, text=True,
        timeout=60, env=environment,
    )  # fmt: skip
    assert bare.returncode != 0 and "libllama-server-impl.so" in bare.stderr
