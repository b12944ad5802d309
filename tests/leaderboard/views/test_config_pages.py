"""A config's page and a run's: the chart data, the llama-server command and the runs table; the
one best run named the same on the row, the page, its energy and the API; acceptance per
position and the memory trade-off; the concurrency and categories breakdowns; energy and the
roofline; provenance and the per-request downloads (JSON, and CSV safe from formulas); how
acceptance spreads over a run's requests; a batch of one request with no interval, whichever
form its file or its row was stored in; the runner's fidelity grade for measured runs only, and
each GPU's peak memory on a run of several GPUs."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import subprocess

import pytest
from django.test import Client
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.models import Job, LeaderboardEntry, RequestRecord, Run
from runner.config import parse_config
from runner.fidelity import NEAR_TIE_MARGIN, fidelity_grade
from tests.support.baselines import (
    CPU_FLAGS,
    DRAFT_SIMPLE,
    NGRAM_MOD,
    diverged,
    on_engine,
    speculative_and_baseline,
    start,
    with_baseline_section,
)
from tests.support.gpu_kinds import MIB
from tests.support.h200_results import CONCURRENCY_LEVELS, load_h200_concurrency
from tests.support.measured_configs import (
    degenerate_result,
    draft_simple,
    measure,
    measured_run,
    quick_config,
    set_drafts,
    with_energy,
)
from tests.support.pages import element_text, embedded, text
from tests.support.protocol_results import (
    categories_config,
    category_records,
    concurrency_config,
    concurrency_records,
)
from tests.support.protocol_runs import (
    CATEGORIES,
    CATEGORY_ACCEPTANCE,
    CATEGORY_BASELINE,
    CATEGORY_DECODE,
    CONCURRENCY_BASELINE,
    CONCURRENCY_SPECULATIVE,
    LEVELS,
    concurrency_key,
    import_result,
)

# The config page ----------------------------------------------------------------------------------


def test_config_detail_embeds_chart_data_the_command_and_a_table(client, measured_job):
    response = client.get(f"/configs/{measured_job.config.key}/")
    page = response.content.decode()

    data = embedded(page, "tps-data")
    assert data["mean"] == [pytest.approx(102.0)] and data["definition"] == "decode"
    assert 'data-chart-source="tps-data"' in page
    assert "leaderboard/vendor/chart.umd.min.js" in page and "leaderboard/charts.js" in page
    command = element_text(page, "server-command")
    # The command the runner ran (the test engine is llama-server), every flag the config implies.
    assert command.startswith("llama-server -m tiny-qwen3.gguf ")
    assert "--spec-type draft-simple" in command
    assert 'id="runs-table"' in page and "lossless" in page


def test_the_row_the_config_page_its_energy_and_the_api_name_one_best_run(
    client, user, ranked_models, hardware, enqueued, make_result
):
    data = quick_config("draft-simple", 4)
    batches = {}
    # A clean batch; a faster one whose output looped; a faster still, but noisy.
    for name, decode, joules in (
        ("clean", [100.0, 104.0, 102.0], 50.0),
        ("looped", [150.0, 152.0, 151.0], 70.0),
        ("noisy", [20.0, 300.0, 250.0], 150.0),
    ):
        job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
        result = (
            degenerate_result(make_result, job.config.key, decode)
            if name == "looped"
            else make_result(job.config.key, decode, draft=(40, 30), tau=2.2)
        )
        services.record_result(job_id=job.pk, result=with_energy(result, joules))
        batches[name] = Run.objects.get(job=job)
    clean = batches["clean"]
    assert batches["looped"].degenerate and not clean.degenerate

    row = LeaderboardEntry.objects.get(config=clean.config)
    assert row.best_run == clean and row.runs_count == 3
    assert row.tokens_per_second == pytest.approx(102.0) and not row.degenerate and not row.noisy

    page = text(client.get(f"/configs/{clean.config.key}/"))
    provenance = re.search(r"Provenance <span class=\"sub\">of the best run, (.*?)</span>", page)
    assert f'href="/runs/{clean.pk}/">run #{clean.pk}<' in provenance.group(1)
    # Its energy: 50 J a request over 64 tokens, not the looped or noisy batch's.
    assert element_text(page, "joules-per-token").startswith("0.781 J")

    (api,) = [
        r
        for r in client.get("/api/v1/leaderboard").json()["results"]
        if r["config_key"] == clean.config.key
    ]
    assert api["best_run_id"] == clean.pk
    assert api["tokens_per_second"] == pytest.approx(102.0)
    assert api["joules_per_token"] == pytest.approx(50.0 / 64)


def test_the_config_page_charts_acceptance_per_position_and_speedup_against_extra_memory(
    client, h200
):
    run = next(r for r in h200 if r.config.key == "8bddd103171a857f")
    page = text(client.get(f"/configs/{run.config.key}/"))

    acceptance = embedded(page, "acceptance-data")
    assert acceptance["positions"] == list(range(1, 16))
    assert acceptance["rate"][0] == pytest.approx(0.9459, abs=1e-4)
    assert 'id="acceptance-table"' in page and "95%" in page
    memory = embedded(page, "memory-data")
    (point,) = memory["points"]
    assert point["extra_gib"] == pytest.approx((29106372608 - 25583157248) / 2**30)
    # The runner's definition across depths (the file's own summary speedup), not pooled means.
    assert point["speedup"] == pytest.approx(2.7296, abs=1e-3)
    assert 'id="memory-table"' in page and "3.28 GiB" in page


def test_a_cpu_runs_page_says_process_memory_and_shows_no_gpu_memory_chart(
    client, user, ranked_models, hardware, enqueued, make_result
):
    job = measure(user, hardware, make_result, 4, [100.0, 104.0])
    run = job.run
    config_page = client.get(f"/configs/{job.config.key}/").content.decode()
    assert 'id="memory-chart"' in config_page  # GPU memory on both sides: the trade-off chart
    assert "117.7 MiB GPU memory" in config_page

    Run.objects.update(memory_kind="process", peak_memory_bytes=300 * 2**20)
    services.raise_board_version()
    run_page = client.get(f"/runs/{run.pk}/").content.decode()
    assert element_text(run_page, "peak-memory") == "300.0 MiB process memory"
    config_page = client.get(f"/configs/{job.config.key}/").content.decode()
    assert 'id="memory-chart"' not in config_page and "extra GPU memory" not in config_page

    Run.objects.update(peak_memory_bytes=0)
    services.raise_board_version()
    run_page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Peak memory" not in run_page and "0.0 GiB" not in run_page


@pytest.mark.engine
def test_the_command_on_a_config_page_starts_llama_server_when_pasted_into_a_shell(
    client, user, ranked_models, hardware, enqueued, make_result, tiny_models
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


def test_a_self_drafted_config_names_its_missing_model_once(
    client, user, hardware, make_protocol_result
):
    config = categories_config(
        CATEGORIES, draft_model="tiny-mtp.gguf", target_model="tiny-mtp.gguf"
    )
    result = make_protocol_result(
        config,
        category_records(config, CATEGORY_DECODE, CATEGORY_ACCEPTANCE),
        category_records(config.baseline(), CATEGORY_BASELINE, None),
    )
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    page = re.sub(
        r"\s+", " ", html.unescape(client.get(f"/configs/{config.key}/").content.decode())
    )
    assert "It cannot be run here: tiny-mtp.gguf is not a registered model" in page


# The concurrency and categories protocols on the config page --------------------------------------


def test_the_config_page_charts_aggregate_throughput_against_its_baseline_with_the_crossover(
    client, concurrency_runs
):
    page = text(client.get(f"/configs/{concurrency_key()}/"))

    chart = embedded(page, "config-concurrency-data")
    assert chart["levels"] == LEVELS and chart["crossover"] == 4
    mine, baseline = chart["lines"]
    assert baseline["baseline"] and not mine["baseline"]
    assert mine["aggregate"] == pytest.approx(CONCURRENCY_SPECULATIVE, rel=1e-3)
    assert baseline["aggregate"] == pytest.approx(CONCURRENCY_BASELINE, rel=1e-3)
    assert 'data-chart-source="config-concurrency-data"' in page
    table = re.search(
        r'<table class="concurrency-table" id="config-concurrency-table">(.*?)</table>', page
    ).group(1)
    rows = re.findall(r"<tr.*?</tr>", table)
    assert len(rows) == 1 + len(LEVELS)
    # Level 4 is the crossover row: its speedup is 160 / 200 and it is marked.
    assert 'class="crossover"' in rows[3] and "0.80×" in rows[3]
    assert "1.67×" in rows[1] and "1.25×" in rows[2]
    # Clearly faster at 2 and clearly slower at 4 over two rounds each: the interval is (2, 4].
    assert "Crossover between 2 and 4 concurrent requests" in page


def test_a_config_that_never_paid_does_not_read_as_crossing_over(
    client, user, models, hardware, make_protocol_result
):
    config = concurrency_config([1, 2, 4])
    result = make_protocol_result(
        config,
        concurrency_records(config, [60.0, 80.0, 100.0], acceptance=0.75),
        concurrency_records(config.baseline(), [100.0, 160.0, 300.0], acceptance=None),
    )
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    page = re.sub(
        r"\s+", " ", html.unescape(client.get(f"/configs/{config.key}/").content.decode())
    )
    assert "Speculation did not pay at any level measured" in page
    assert "Crossover at 1 concurrent requests" not in page


def test_the_config_page_breaks_a_categories_result_down_by_category(client, category_runs):
    key = categories_config(CATEGORIES).key
    page = text(client.get(f"/configs/{key}/"))

    chart = embedded(page, "category-data")
    assert chart["categories"] == CATEGORIES
    assert chart["acceptance"] == pytest.approx([0.9, 0.6, 0.2])
    assert chart["speedup"] == pytest.approx([1.8, 1.2, 0.9], rel=1e-6)
    table = re.search(
        r'<table class="category-table" id="config-category-table">(.*?)</table>', page
    )
    rows = re.findall(r"<tr>.*?</tr>", table.group(1))
    assert "code" in rows[1] and "1.80×" in rows[1] and "90.0%" in rows[1]
    assert "translation" in rows[3] and "0.90×" in rows[3]


def test_each_category_carries_intervals_over_its_prompts_and_two_prompts_are_anecdotal(
    client, category_runs
):
    key = categories_config(CATEGORIES).key
    page = text(client.get(f"/configs/{key}/"))

    table = re.search(
        r'<table class="category-table" id="config-category-table">(.*?)</table>', page
    ).group(1)
    rows = re.findall(r"<tr>.*?</tr>", table)
    # Two prompts a category: each figure is an anecdote, and the page says so at the figure.
    assert all("anecdotal" in row for row in rows[1:])
    assert "· 2" in rows[1]
    body = client.get(f"/api/v1/configs/{key}").json()
    code = next(c for c in body["categories"] if c["category"] == "code")
    assert code["prompts"] == 2 and code["anecdotal"] is True
    low, high = code["speedup_ci95_low"], code["speedup_ci95_high"]
    assert low < code["speedup"] < high


# Energy and the roofline --------------------------------------------------------------------------


def test_energy_and_the_roofline_show_on_the_config_and_run_pages(client, category_runs):
    run = Run.objects.get(config__key=categories_config(CATEGORIES).key)
    for url in (f"/configs/{run.config.key}/", f"/runs/{run.pk}/"):
        page = text(client.get(url))
        assert element_text(page, "joules-per-token").startswith("2.500 J "), url
        assert "includes its prefill and any idle time within it" in page, url
        assert "Joules per accepted" not in page and "joules-per-accepted" not in page, url
    board = text(client.get("/", {"all": "1"}))
    assert "2.500 J/token" in board


def test_a_result_without_energy_shows_none_rather_than_zero(
    client, user, models, hardware, make_protocol_result
):
    config = concurrency_config([1, 2])
    import_result(
        user,
        hardware,
        make_protocol_result(
            config, concurrency_records(config, [50.0, 80.0], acceptance=0.5), None
        ),
    )
    run = Run.objects.get(config__key=config.key)
    page = text(client.get(f"/runs/{run.pk}/"))
    assert 'id="energy"' not in page and "J/token" not in text(client.get("/", {"all": "1"}))
    (row,) = APIClient().get("/api/v1/leaderboard", {"source": "all"}).json()["results"]
    assert row["joules_per_token"] is None and row["joules_per_accepted_token"] is None


def test_a_baseline_at_a_cpu_fallback_speed_is_flagged_far_below_the_roofline(
    client, user, models, hardware, make_protocol_result
):
    config = categories_config(CATEGORIES).baseline()
    # 100 tok/s against a ceiling of 10^12 bytes/s over the tiny target's bytes per token.
    result = make_protocol_result(
        config, category_records(config, CATEGORY_BASELINE, None), None, bandwidth=10**13
    )
    assert result["summary"]["roofline"]["flag"] == "far_below"
    (run,) = import_result(user, hardware, result)
    page = text(client.get(f"/runs/{run.pk}/"))
    assert "far below" in page and "likely a CPU fallback" in page
    entry = LeaderboardEntry.objects.get(config=run.config)
    (row,) = [
        r
        for r in APIClient().get("/api/v1/leaderboard", {"source": "all"}).json()["results"]
        if r["id"] == entry.pk
    ]
    assert row["roofline_flag"] == "far_below" and row["roofline_fraction"] < 0.05


# A run's provenance and its downloads -------------------------------------------------------------


def test_every_result_has_a_provenance_panel_and_raw_record_downloads(client, h200):
    run = next(r for r in h200 if r.config.key == "8bddd103171a857f")
    page = text(client.get(f"/runs/{run.pk}/"))

    assert "--spec-type draft-dflash" in page or "llama-server" in page
    assert '<pre id="server-command">' in page
    assert "a8d4f2eb093cf269ceca3f9dd96d5d2b8254e11c45acdb332fb6cd0a13977761" in page
    assert "948bf00fe5d9843061f5441b9dff98e359237d94c96c8a143324fa4958921ff2" in page
    assert "NVIDIA H200" in page and "580.159.04" in page and "13.0" in page
    assert "b11434" in page
    assert f'href="/runs/{run.pk}/requests.csv"' in page
    assert f'href="/runs/{run.pk}/requests.json"' in page
    config_page = text(client.get(f"/configs/{run.config.key}/"))
    assert f'href="/runs/{run.pk}/requests.csv"' in config_page


def test_the_raw_records_download_as_json(client, h200):
    run = next(r for r in h200 if r.config.key == "8bddd103171a857f")
    response = client.get(f"/runs/{run.pk}/requests.json")

    body = json.loads(response.content)
    assert response.headers["Content-Disposition"].endswith('requests.json"')
    assert len(body["requests"]) == 8 and body["engine_release"] == "b11434"
    assert body["requests"][0]["accepted_per_position"][:3] == [35, 28, 26]
    assert body["provenance"]["system"]["driver"] == "580.159.04"


def test_the_csv_download_neutralises_cells_a_spreadsheet_would_run_as_formulas(client, h200):
    run = next(r for r in h200 if r.config.key == "8bddd103171a857f")
    hostile = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "plain"]
    for index, value in enumerate(hostile):
        RequestRecord.objects.filter(run=run, index=index).update(output_sha256=value)
    response = client.get(f"/runs/{run.pk}/requests.csv")

    assert response.headers["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["output_sha256"] for row in rows[:5]] == [
        '\'=HYPERLINK("http://x")',
        "'+1+1",
        "'-2+3",
        "'@SUM(A1)",
        "plain",
    ]
    assert not any(cell[:1] in "=+-@" for row in rows for cell in row.values() if cell)
    # The stored decode rate, by llama-bench's convention: the n - 1 tokens after the first
    # over the generation time (llama-server's own timings in the record).
    first = rows[0]
    decode = (int(first["predicted_n"]) - 1) / float(first["predicted_ms"]) * 1000
    assert float(first["decode_tokens_per_second"]) == pytest.approx(decode)
    assert first["decode_tokens_per_second"].startswith("206.55")


def test_unknown_runs_are_not_found(client, db):
    assert client.get("/runs/999/").status_code == 404
    assert client.get("/runs/999/requests.csv").status_code == 404


# The H200's concurrency result ----------------------------------------------------------------


@pytest.fixture
def h200_concurrency(user, db):
    """The H200's concurrency result (docs/gpu-results/h200-run4): (its hardware kind, [the
    baseline run, the speculative run])."""
    return load_h200_concurrency(owner=user)


def test_the_run_page_names_each_requests_concurrency_level(h200_concurrency, client: Client):
    _, (_, speculative) = h200_concurrency
    page = client.get(f"/runs/{speculative.pk}/").content.decode()
    for level in CONCURRENCY_LEVELS:
        assert f'<td class="num">{level} concurrent</td>' in page


def test_the_run_page_shows_point_indices_when_the_stored_points_say_nothing(
    h200_concurrency, client: Client
):
    _, (_, speculative) = h200_concurrency
    Run.objects.filter(pk=speculative.pk).update(
        raw_result={"points": [1, {"concurrency": True}, {"category": 5}, None, "x"]}
    )
    page = client.get(f"/runs/{speculative.pk}/")
    assert page.status_code == 200
    assert "concurrent</td>" not in page.content.decode()


# How acceptance spreads over a run's requests -------------------------------------------------


@pytest.fixture
def spread_run(user, hardware, make_result, models) -> Run:
    """A draft-simple run of five measured requests, whose drafting each test sets."""
    return measured_run(user, hardware, make_result, [100.0, 101.0, 102.0, 103.0, 104.0])


def test_the_config_and_run_pages_show_the_spread(client, spread_run):
    set_drafts(spread_run, [(10, 9, 4.0), (10, 2, 1.5), (10, 10, 6.0), (0, 0, None), (20, 11, 2.5)])

    for path in (f"/configs/{spread_run.config.key}/", f"/runs/{spread_run.pk}/"):
        page = client.get(path).content.decode()
        section = page[page.index('id="acceptance-spread"') :]
        assert "4 of 5 measured requests drafted; 1 drafted nothing" in section
        table = section[: section.index("</table>")]
        cells = re.findall(r'<td class="num">(\d+)</td>', table)
        assert cells == ["0", "0", "1", "0", "0", "1", "0", "0", "0", "2"]
        assert "median 72.5%" in section
        assert 'id="acceptance-spread-data"' in section


def test_a_baseline_has_no_spread_section(client, spread_run):
    baseline = Run.objects.filter(config=spread_run.config.baseline).first()
    assert baseline is not None
    for path in (f"/configs/{spread_run.config.baseline.key}/", f"/runs/{baseline.pk}/"):
        response = client.get(path)
        assert response.status_code == 200
        assert 'id="acceptance-spread"' not in response.content.decode()


def test_the_run_page_lists_each_requests_verify_steps_beside_its_tau(client, spread_run):
    records = list(spread_run.requests.filter(phase="measure").order_by("index"))
    for steps, record in enumerate(records, start=7):
        record.verify_steps = steps
    RequestRecord.objects.bulk_update(records, ["verify_steps"])

    page = client.get(f"/runs/{spread_run.pk}/").content.decode()
    table = page[page.index('id="requests-table"') :]
    header = re.findall(r"<th[^>]*>([^<]*)</th>", table[: table.index("</thead>")])
    column = header.index("Verify steps")
    assert header[column - 1 : column + 2] == ["Accepted", "Verify steps", "tau"]
    body = table[table.index("<tbody>") : table.index("</tbody>")]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in body.split("</tr>") if "<td" in row]
    assert [row[column] for row in rows] == [str(7 + i) for i in range(len(records))]


# A batch of one request has no interval -------------------------------------------------------


def old_form(result: dict) -> dict:
    """The result as files before the null-spread rule have it: every statistic of one value
    with stdev 0.0 and an interval of exactly its mean."""
    statistics = [result["summary"][name] for name in ("decode_tokens_per_second",
                  "end_to_end_tokens_per_second", "ttft_ms")]  # fmt: skip
    for statistic in statistics:
        if statistic["n"] == 1:
            statistic |= {
                "stdev": 0.0,
                "ci95_low": statistic["mean"],
                "ci95_high": statistic["mean"],
            }
    return result


@pytest.fixture
def one_request_job(user, models, hardware, enqueued):
    return services.submit_config(
        owner=user, data=draft_simple(3, runs=1), hardware_slug=hardware.slug
    )


def run_job_and_config_pages(client, run: Run) -> list[str]:
    return [
        text(client.get(f"/runs/{run.pk}/")),
        text(client.get(f"/jobs/{run.job_id}/")),
        text(client.get(f"/configs/{run.config.key}/")),
    ]


@pytest.mark.parametrize("written", ["null", "zero-width"])
def test_a_one_request_run_shows_no_interval_whichever_form_its_file_used(
    client, one_request_job, make_result, written
):
    result = make_result(one_request_job.config.key, [120.0], draft=(40, 30), tau=2.5)
    assert result["summary"]["decode_tokens_per_second"]["ci95_low"] is None
    if written == "zero-width":
        result = old_form(result)
        assert result["summary"]["decode_tokens_per_second"]["ci95_high"] == 120.0

    services.record_result(job_id=one_request_job.pk, result=result)

    run = Run.objects.get(job=one_request_job)
    assert run.n == 1 and run.decode_mean == 120.0
    assert (run.decode_stdev, run.decode_ci95_low, run.decode_ci95_high) == (None, None, None)
    run_page, job_page, config_page = run_job_and_config_pages(client, run)
    assert "(95% CI no interval, n 1)" in run_page
    assert "95% CI no interval" in job_page
    for page in (run_page, job_page, config_page):
        assert "120.0 – 120.0" not in page
    assert "no interval" in config_page
    api = client.get(f"/api/v1/runs/{run.pk}").json()
    assert (api["decode_stdev"], api["decode_ci95_low"], api["decode_ci95_high"]) == (None,) * 3


def test_a_row_stored_with_a_zero_width_interval_still_shows_no_interval(
    client, one_request_job, make_result
):
    services.record_result(
        job_id=one_request_job.pk, result=make_result(one_request_job.config.key, [120.0])
    )
    # As the site stored one-request batches before the rule.
    Run.objects.filter(job=one_request_job).update(
        decode_stdev=0.0, decode_ci95_low=120.0, decode_ci95_high=120.0
    )
    run = Run.objects.get(job=one_request_job)

    assert run.ci95 == (None, None)
    for page in run_job_and_config_pages(client, run):
        assert "120.0 – 120.0" not in page
    api = client.get(f"/api/v1/runs/{run.pk}").json()
    assert (api["decode_stdev"], api["decode_ci95_low"], api["decode_ci95_high"]) == (None,) * 3


def test_two_requests_still_show_their_interval(
    client, user, models, hardware, enqueued, make_result
):
    job = services.submit_config(
        owner=user, data=draft_simple(3, runs=2), hardware_slug=hardware.slug
    )
    services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0, 104.0]))
    run = Run.objects.get(job=job)
    low, high = run.ci95

    assert low < 102.0 < high
    assert (
        f"(95% CI {max(low, 0):,.1f} – {high:,.1f}, n 2)"
        in run_job_and_config_pages(client, run)[0]
    )


GRADE = {
    "verdict": "near ties only",
    "requests": 2,
    "identical_requests": 1,
    "identical_share": 0.5,
    "mean_identical_prefix_tokens": 48.0,
    "mean_identical_prefix_share": 0.75,
    "near_ties": 1,
    "mismatches": 0,
    "unclassified": 0,
    "near_tie_margin": NEAR_TIE_MARGIN,
}


@pytest.fixture
def jobs(user, models, hardware, enqueued) -> tuple[Job, Job]:
    """An n-gram job and its paired baseline, submitted separately, both started."""
    return speculative_and_baseline(user, hardware, data=NGRAM_MOD, started=True)


def test_the_run_page_shows_a_fidelity_grade_only_where_outputs_were_compared(
    jobs, make_result, client: Client
):
    speculative, _ = jobs
    # A grade claimed in the file, without the baseline section whose outputs would decide it.
    result = make_result(speculative.config.key, [90.0, 95.0])
    result["summary"]["fidelity"] = GRADE
    claimed = services.record_result(job_id=speculative.pk, result=result)
    assert "near ties only" not in client.get(f"/runs/{claimed.pk}/").content.decode()

    # Graded by the site from the two sections' outputs (CPU: where the threshold was measured).
    again = services.submit_config(
        owner=speculative.owner, data=DRAFT_SIMPLE, hardware_slug=speculative.hardware.slug
    )
    start(again)
    # Three requests, as DRAFT_SIMPLE plans: the second flipped one near tie.
    graded = on_engine(
        diverged(
            make_result(again.config.key, [90.0, 95.0, 92.5], outputs=["a", "b", "d"]),
            None,
            "near tie",
            None,
        ),
        backend="cpu",
        flags=CPU_FLAGS,
    )
    # The grade the runner gives its records (the result model derives it again).
    graded["summary"]["fidelity"] = fidelity_grade(graded["requests"]).model_dump(mode="json")
    baseline = make_result(again.config.baseline.key, [50.0, 50.0, 50.0], outputs=["a", "c", "d"])
    run = services.record_result(job_id=again.pk, result=with_baseline_section(graded, baseline))

    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "near ties only" in page and "2 of 3 requests identical" in page


def test_the_run_page_of_a_two_gpu_run_shows_each_gpus_peak(make_result, two_3090s, user, client):
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "runs": 3}}
    )
    result = make_result(config, [70.0, 71.0, 72.0])
    total = result["summary"]["peak_memory_bytes"]
    result["summary"]["gpus"] = [
        {"index": 0, "peak_memory_bytes": total - 20 * MIB, "energy_joules": None},
        {"index": 1, "peak_memory_bytes": 20 * MIB, "energy_joules": None},
    ]
    (run,) = services.import_runner_result(
        owner=user, hardware=two_3090s, result=result, source="test"
    )
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "2x RTX 3090 24GB" in page
    assert "GPU 1: 20.0 MiB" in page
