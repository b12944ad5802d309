"""The board's pages: ranking with ties and trust flags, n_max, context, compare, hardware and
model pages, best config for a GPU, run provenance and raw downloads, job progress."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from leaderboard import services
from leaderboard.models import Job, RequestRecord, Run
from leaderboard.services.board import mark_test_weights
from tests.support.h200_results import DEPTH_FILES, load_h200_results
from tests.support.measured_configs import draft_simple, measure
from tests.support.seed_kit import SEED_CSV


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def section(page: str, table_id: str) -> str:
    match = re.search(rf'<table class="board" id="{table_id}">(.*?)</table>', page)
    return match.group(1) if match else ""


def json_data(page: str, element_id: str):
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    return json.loads(found.group(1))


@pytest.fixture
def models(models):
    """The tiny fixture models, cleared of their test-weights mark as an admin could: these tests
    are about the ranking, and test-weight rows never enter it (test_definitions_on_pages)."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


@pytest.fixture
def two_close_configs(user, models, hardware, enqueued, make_result) -> tuple[Job, Job]:
    leader = measure(user, hardware, make_result, 4, [100.0, 104.0])
    runner_up = measure(user, hardware, make_result, 3, [99.0, 103.0])
    return leader, runner_up


@pytest.fixture
def h200(user, hardware) -> list[Run]:
    return load_h200_results(owner=user, hardware=hardware)


def test_configs_whose_interval_overlaps_the_leaders_are_tied_and_share_rank_one(
    client, two_close_configs
):
    page = text(client.get("/"))
    ranking = section(page, "ranking")
    rows = re.findall(r'<tr(?: class="tied")?>\s*<td class="rank">(\d+)</td>.*?</tr>', ranking)

    assert rows == ["1", "1", "3"]
    assert ranking.count("tied with leader") == 1
    assert '<tr class="tied"> <td class="rank">1</td> <td><a href="/configs/' in ranking


def test_the_main_ranking_keeps_synthetic_and_self_reported_results_apart_until_toggled(
    client, two_close_configs, h200
):
    services.import_leaderboard_csv(content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000")
    page = text(client.get("/"))

    ranking, kept_off = section(page, "ranking"), section(page, "kept-off-table")
    assert "draft-simple · self-draft · n_max 4" in ranking
    assert "qwen36-dflash15" not in ranking and "synthetic" not in ranking
    assert "qwen36-dflash15" in kept_off and "self-reported" in kept_off
    assert "qwen3-8b-random · draft-dflash" in kept_off and "degenerate" in kept_off
    assert 'id="toggle-flagged" href="?all=1"' in page

    everything = text(client.get("/", {"all": "1"}))
    assert "qwen36-dflash15" in section(everything, "ranking")
    assert "kept-off-table" not in everything
    assert "Show the main ranking only" in everything


def test_results_from_an_older_engine_release_are_marked_stale(
    client, user, models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0], release="b11000")
    measure(user, hardware, make_result, 5, [90.0, 94.0], release="b11434")
    ranking = section(text(client.get("/")), "ranking")

    rows = re.findall(r"<tr.*?</tr>", ranking)
    old = [row for row in rows if "b11000" in row]
    new = [row for row in rows if "b11434" in row]
    assert old and all(">stale</span>" in row for row in old)
    assert new and not any(">stale</span>" in row for row in new)


def test_a_retired_build_leaves_the_ranking_and_comes_back_with_the_toggle(
    client, user, models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0], release="b11000")
    services.retire_engine_build(release="b11000", note="miscompiled CUDA kernels")

    assert "n_max 4" not in section(text(client.get("/")), "ranking")
    assert "retired build" in section(text(client.get("/")), "kept-off-table")
    assert "retired build" in section(text(client.get("/", {"all": "1"})), "ranking")


def test_search_narrows_the_leaderboard_to_matching_rows(client, two_close_configs):
    ranking = section(text(client.get("/", {"q": "n_max 3"})), "ranking")
    assert "n_max 3" in ranking and "n_max 4" not in ranking


def test_the_leaderboard_paginates(client, two_close_configs, monkeypatch):
    monkeypatch.setattr("leaderboard.views.PAGE_SIZE", 2)
    first, second = text(client.get("/")), text(client.get("/", {"page": "2"}))
    assert "page 1 of 2" in first and 'href="?&amp;page=2"' in first
    assert re.findall(r'<td class="rank">(\d+)</td>', section(second, "ranking")) == ["3"]


def test_the_nmax_view_marks_the_best_nmax_and_claims_no_win_its_intervals_do_not_show(
    client, h200, hardware
):
    page = text(client.get("/nmax/", {"target": "qwen3-8b-random", "hardware": hardware.slug}))

    assert 'draft-dflash <span class="sub">best n_max 12</span>' in page
    assert re.search(r'<tr class="best"> <td class="num">12 <span class="badge good">best', page)
    # Two requests a point: n_max 12's interval (294-506) overlaps n_max 1's and 2's, so the
    # board's tie test finds no clear win, and the page says so instead of claiming one.
    assert 'class="finding"' not in page and 'id="no-finding"' in page
    data = json_data(page, "nmax-data")
    # The 4-depth run at n_max 15 is another protocol: a series of its own.
    (dflash,) = [t for t in data["types"] if t["protocol"] == "depth 512 tokens"]
    assert dflash["n_max"] == [1, 2, 4, 8, 12, 15] and dflash["best_n_max"] == 12
    assert dflash["acceptance"][1] == pytest.approx(0.8656, abs=1e-4)
    assert dflash["tau"][4] == pytest.approx(6.2195, abs=1e-4)


def test_the_nmax_view_without_data_says_so(client, db):
    assert "No results with an n_max" in text(client.get("/nmax/"))


def test_the_context_view_has_one_line_per_config_with_speedup_per_depth(client, h200):
    page = text(client.get("/context/"))

    data = json_data(page, "context-data")
    assert data["depths"] == [512, 4096, 12288, 36864]
    by_target = {line["label"].split(" ·")[0]: line for line in data["lines"]}
    assert set(by_target) == {"qwen3-8b-random", "qwen3-27b-random"}
    assert by_target["qwen3-27b-random"]["speedup"][0] == pytest.approx(2.590, abs=1e-3)
    assert by_target["qwen3-8b-random"]["speedup"][-1] == pytest.approx(2.556, abs=1e-3)
    assert 'id="context-table"' in page and "2.59×" in page and "2.56×" in page


def test_the_context_view_pairs_with_a_separately_measured_baseline(client, h200):
    """Drop the runner's own pairing: the view must pair with the baseline config's run."""
    for run in Run.objects.exclude(config__spec_label="none").filter(config__protocol="depth"):
        for point in run.raw_result["points"]:
            point["speedup"] = None
        run.raw_result["baseline"] = None
        run.save(update_fields=["raw_result"])
    data = json_data(text(client.get("/context/")), "context-data")
    line = next(line for line in data["lines"] if line["label"].startswith("qwen3-27b"))
    assert line["speedup"][0] == pytest.approx(2.590, abs=1e-3)


def test_the_config_page_charts_acceptance_per_position_and_speedup_against_extra_memory(
    client, h200
):
    run = next(r for r in h200 if r.config.key == "8bddd103171a857f")
    page = text(client.get(f"/configs/{run.config.key}/"))

    acceptance = json_data(page, "acceptance-data")
    assert acceptance["positions"] == list(range(1, 16))
    assert acceptance["rate"][0] == pytest.approx(0.9459, abs=1e-4)
    assert 'id="acceptance-table"' in page and "95%" in page
    memory = json_data(page, "memory-data")
    (point,) = memory["points"]
    assert point["extra_gib"] == pytest.approx((29106372608 - 25583157248) / 2**30)
    # The runner's definition across depths (the file's own summary speedup), not pooled means.
    assert point["speedup"] == pytest.approx(2.7296, abs=1e-3)
    assert 'id="memory-table"' in page and "3.28 GiB" in page


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
    assert rows[0]["decode_tokens_per_second"].startswith("207.36")


def test_unknown_runs_are_not_found(client, db):
    assert client.get("/runs/999/").status_code == 404
    assert client.get("/runs/999/requests.csv").status_code == 404


def test_compare_puts_configs_side_by_side_with_a_welch_interval_of_the_difference(
    client, two_close_configs
):
    leader, runner_up = two_close_configs
    baseline = leader.config.baseline
    keys = f"{leader.config.key},{runner_up.config.key},{baseline.key}"
    page = text(client.get("/compare/", {"keys": keys}))

    # Both means are over [x, x+4] (sd 2.83, n 2): difference -1.0, se 2.83, Welch df 2, t 4.303.
    assert "<strong>−1.0</strong> tok/s" in page
    assert "−13.2 to +11.2 · not distinguishable" in page
    assert "<strong>−51.0</strong>" in page
    data = json_data(page, "compare-data")
    assert data["tokens_per_second"] == [pytest.approx(102.0), pytest.approx(101.0), 51.0]
    assert len(data["acceptance_by_position"]) == 3
    assert 'data-chart-kind="acceptance"' in page and 'id="compare-table"' in page


def test_compare_explains_a_wrong_number_of_keys_or_an_unknown_key_inline(client, db):
    one = text(client.get("/compare/", {"keys": "abc"}))
    unknown = text(client.get("/compare/", {"keys": "abc,def"}))
    assert "Give two to four different config keys." in one
    assert "Unknown config keys: abc, def." in unknown


def test_the_best_config_for_a_memory_size_is_the_fastest_lossless_one_that_fits(
    client, two_close_configs, h200
):
    leader, _ = two_close_configs
    found = text(client.get("/best/", {"target": "tiny-qwen3", "memory_gb": "1"}))
    too_small = text(client.get("/best/", {"target": "tiny-qwen3", "memory_gb": "0.1"}))
    synthetic_only = text(client.get("/best/", {"target": "qwen3-8b-random", "memory_gb": "100"}))

    assert re.search(rf'id="best-answer"><strong><a href="/configs/{leader.config.key}/">', found)
    assert re.search(r'id="best-tied">Tied with it .*?n_max 3</a>', found)
    assert "No lossless, measured config of this model fits" in too_small
    assert "No lossless, measured config" in synthetic_only


def test_the_best_config_for_a_gpu_uses_its_memory_and_its_results(
    client, two_close_configs, hardware
):
    leader, _ = two_close_configs
    page = text(client.get("/best/", {"target": "tiny-qwen3", "hardware": hardware.slug}))
    assert f'id="best-answer"><strong><a href="/configs/{leader.config.key}/">' in page


def test_the_best_config_form_needs_a_gpu_or_a_memory_size(client, two_close_configs):
    page = text(client.get("/best/", {"target": "tiny-qwen3"}))
    assert re.search(r'id="field-memory_gb">.*?Pick a GPU or enter its memory in GB', page)


def test_hardware_and_model_pages_rank_their_results(client, two_close_configs, hardware):
    listing = text(client.get("/hardware/"))
    detail = text(client.get(f"/hardware/{hardware.slug}/"))
    models = text(client.get("/models/"))
    model = text(client.get("/models/tiny-qwen3/"))

    assert f'href="/hardware/{hardware.slug}/">H200</a>' in listing
    assert "tied with leader" in detail and "n_max 4" in detail
    assert 'href="/models/tiny-qwen3/">tiny-qwen3</a>' in models
    assert "n_max 3" in model and "tied with leader" in model
    assert client.get("/models/nothing-here/").status_code == 404
    assert client.get("/hardware/nothing-here/").status_code == 404


def test_the_job_page_estimates_the_time_left(client, user, models, hardware, enqueued):
    job = services.submit_config(owner=user, data=draft_simple(4), hardware_slug=hardware.slug)
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    services.record_progress(
        job_id=job.pk,
        progress={"phase": "measuring", "done": 2, "total": 6, "tokens": 128, "elapsed_s": 10.0},
    )
    page = text(client.get(f"/jobs/{job.pk}/"))

    assert '<progress max="100" value="33"' in page
    assert 'data-field="tokens">128</span> tokens' in page
    assert 'data-field="elapsed_s">10</span> s elapsed' in page
    assert 'about <span data-field="remaining_s">20</span> s to go' in page


@pytest.mark.parametrize(
    "url",
    ["/", "/nmax/", "/context/", "/compare/", "/hardware/", "/models/", "/best/"],
)
def test_the_new_pages_render_without_data_and_without_inline_scripts(client, db, url):
    response = client.get(url)
    assert response.status_code == 200
    assert re.search(r"<script>(?!\s*</script>)", response.content.decode()) is None
    assert "unsafe-inline" not in response.headers["Content-Security-Policy"]


def test_the_depth_result_files_hold_the_runners_own_baseline(h200):
    assert all(name.endswith("-depth.json") for name in DEPTH_FILES)
    assert Run.objects.filter(config__spec_label="none").count() == 2
