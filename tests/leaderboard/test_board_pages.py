"""The board's pages: one ranking per workload, tok/s definition, GPU and release, each under its
heading, with the baselines apart as denominators; ranks by the point estimate with Welch labels
("≈ leader", "no interval") and trust flags; n_max, context, compare, hardware and model pages,
best config for a GPU, run provenance and raw downloads, job progress."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from leaderboard import services
from leaderboard.models import Job, LeaderboardEntry, RequestRecord, Run
from leaderboard.services.board import mark_test_weights
from tests.support.baselines import with_baseline_section
from tests.support.h200_results import DEPTH_FILES, load_h200_results
from tests.support.measured_configs import draft_simple, measure
from tests.support.protocol_results import categories_config, category_records
from tests.support.seed_kit import SEED_CSV


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def section(page: str, table_id: str) -> str:
    match = re.search(rf'<table class="board" id="{table_id}">(.*?)</table>', page)
    return match.group(1) if match else ""


def board(page: str, table_id: str = "ranking") -> list[dict]:
    """Each row of a board table in page order: its rank ("–" or "base" without one), the
    label under the rank, the heading of the ranking it is under, and its config's label."""
    rows, heading = [], ""
    for cells in re.findall(r"<tr[^>]*>(.*?)</tr>", section(page, table_id)):
        if found := re.match(r' ?<th colspan="10" scope="colgroup">([^<]+)</th>', cells):
            heading = found.group(1)
            continue
        rank = re.search(r'<td class="rank">(.*?)</td>', cells)
        label = re.search(r'<td><a href="/configs/[0-9a-f]+/">([^<]+)</a>', cells)
        if not (rank and label):
            continue
        number = re.match(r"(\d+)", rank.group(1))
        words = re.search(r'class="sub rank-label [^"]*"[^>]*>([^<]+)<', rank.group(1))
        rows.append(
            {
                "rank": number.group(1) if number else re.sub(r"<[^>]+>", "", rank.group(1)),
                "label": words.group(1) if words else "",
                "heading": heading,
                "config": label.group(1),
                "html": cells,
            }
        )
    return rows


def n_max_of(label: str) -> int | str:
    """A config label's n_max (the label itself where it has none: a baseline)."""
    found = re.search(r"n_max (\d+)", label)
    return int(found.group(1)) if found else label


def json_data(page: str, element_id: str):
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    return json.loads(found.group(1))


def measure_config(owner, hardware, make_result, data, decode, baseline=(50.0, 52.0), **options):
    """Submit a config, then store its result with the paired baseline measured in the same run
    (`tests.support.measured_configs.measure` for any config and baseline speed)."""
    job = services.submit_config(owner=owner, data=data, hardware_slug=hardware.slug)
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, decode, draft=(40, 30), tau=2.2, **options),
            make_result(job.config.baseline.key, list(baseline), **options),
        ),
    )
    job.refresh_from_db()
    return job


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


def test_a_faster_row_never_ranks_below_a_slower_one_whose_interval_overlaps_the_leaders(
    client, user, models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 100.1, 100.2])  # 99.85 – 100.35
    measure(user, hardware, make_result, 3, [99.0, 99.1, 99.2])  # narrow, clearly slower
    # Slower still, but so wide that its interval (78 – 118) reaches the leader's.
    measure(user, hardware, make_result, 5, [90.0, 98.0, 106.0])

    rows = board(text(client.get("/")))

    # Ranked by the point estimate: the wide row is third, labelled, never moved up to 1.
    assert [(row["rank"], n_max_of(row["config"])) for row in rows] == [
        ("1", 4),
        ("2", 3),
        ("3", 5),
    ]
    assert [row["label"] for row in rows] == ["", "", "≈ leader"]
    assert ["indistinguishable from the leader</span>" in row["html"] for row in rows] == [
        False,
        False,
        True,
    ]
    stored = {
        e.config.n_max: (e.rank, e.like_leader)
        for e in LeaderboardEntry.objects.filter(config__spec_label="draft-simple")
    }
    assert stored == {4: (1, None), 3: (2, False), 5: (3, True)}
    speeds = [e.tokens_per_second for e in sorted(
        LeaderboardEntry.objects.filter(rank__isnull=False), key=lambda e: e.rank)]  # fmt: skip
    assert speeds == sorted(speeds, reverse=True)


def test_a_row_without_an_interval_keeps_its_place_and_says_so(
    client, user, models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 100.1, 100.2])
    measure(user, hardware, make_result, 3, [99.0])  # one request: no interval
    measure(user, hardware, make_result, 5, [90.0, 98.0, 106.0])  # slower, overlapping

    rows = board(text(client.get("/")))

    # The one-request row is second by its figure, not pushed below the slower overlapping row.
    assert [(row["rank"], n_max_of(row["config"]), row["label"]) for row in rows] == [
        ("1", 4, ""),
        ("2", 3, "no interval"),
        ("3", 5, "≈ leader"),
    ]
    one = LeaderboardEntry.objects.get(config__n_max=3)
    assert (one.rank, one.n, one.like_leader, one.like_above) == (2, 1, None, None)
    assert one.ci95_low is None and one.config_ci95_low is None


def test_quick_categories_and_baseline_rows_are_never_numbered_in_one_ranking(
    client, user, models, hardware, enqueued, make_result, make_protocol_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    measure(user, hardware, make_result, 3, [90.0, 94.0])
    categories = categories_config(["code", "math"])
    result = make_protocol_result(
        categories,
        category_records(categories, {"code": 300.0, "math": 280.0}, {"code": 0.8, "math": 0.6}),
        category_records(categories.baseline(), {"code": 150.0, "math": 150.0}, None),
    )
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="t")

    page = text(client.get("/"))
    rows, baselines = board(page), board(page, "baselines-table")

    # Two rankings, each under its own heading and numbered from 1; no baseline among them.
    headings = [row["heading"] for row in rows]
    assert len(set(headings)) == 2 and headings == sorted(headings, key=headings.index)
    by_heading = {h: [row["rank"] for row in rows if row["heading"] == h] for h in headings}
    assert sorted(by_heading.values()) == [["1"], ["1", "2"]]
    assert [row["rank"] for row in rows].count("1") == 2
    assert any(h.startswith("categories code, math (2)") for h in headings)
    assert any(h.startswith("quick") and "prompt “Write a Python" in h for h in headings)
    assert not any("baseline" in row["config"] for row in rows)
    # The baselines are the denominators: in their own table, under their ranking, unranked.
    assert [row["rank"] for row in baselines] == ["base", "base"]
    assert {row["heading"] for row in baselines} == set(headings)
    assert 'id="baselines">Baselines' in page
    stored = LeaderboardEntry.objects.filter(config__spec_label="none")
    assert stored.count() == 2 and not stored.filter(rank__isnull=False).exists()


def test_the_include_flagged_view_shows_kept_off_rows_unranked(
    client, user, models, hardware, enqueued, make_result
):
    # The tiny random-weight target, marked as test weights again: its rows say nothing.
    mark_test_weights(models=[models["tiny-qwen3"]])
    measure_config(
        user, hardware, make_result, draft_simple(4), [100.0, 104.0], baseline=(5800.0, 5828.0)
    )

    everything = text(client.get("/", {"all": "1"}))

    # The tiny model's baseline at 5,814 tok/s is shown, as a baseline, never as #1.
    assert [(row["rank"], row["config"]) for row in board(everything)] == [
        ("base", "tiny-qwen3 · baseline"),
        ("–", "tiny-qwen3 · draft-simple · self-draft · n_max 4"),
    ]
    assert "5,814.00" in section(everything, "ranking") or "5814.00" in section(
        everything, "ranking"
    )
    assert not re.search(r'<td class="rank">\d', everything)
    assert "No ranked results match" in text(client.get("/"))
    assert not LeaderboardEntry.objects.filter(rank__isnull=False).exists()

    # Cleared, the rows join the ranking; marked again, they leave it and lose their rank.
    mark_test_weights(models=[models["tiny-qwen3"]], test_weights=False)
    assert [(row["rank"], n_max_of(row["config"])) for row in board(text(client.get("/")))] == [
        ("1", 4)
    ]
    mark_test_weights(models=[models["tiny-qwen3"]])
    assert [row["rank"] for row in board(text(client.get("/", {"all": "1"})))] == ["base", "–"]
    assert not LeaderboardEntry.objects.filter(rank__isnull=False).exists()


def test_rows_of_one_label_on_other_workloads_get_their_own_heading_and_ranking(
    client, user, models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    other = draft_simple(4)
    other["protocol"] = other["protocol"] | {"prompt": "Summarise the plot of Hamlet in a page."}
    measure_config(user, hardware, make_result, other, [80.0, 84.0])

    rows = board(text(client.get("/")))

    # The same label, another prompt: two rankings, each with its own leader, told apart by
    # their headings and the rows' workload line.
    assert {row["config"] for row in rows} == {"tiny-qwen3 · draft-simple · self-draft · n_max 4"}
    assert [row["rank"] for row in rows] == ["1", "1"]
    assert len({row["heading"] for row in rows}) == 2
    assert any("prompt “Summarise the plot of Hamlet" in row["heading"] for row in rows)
    assert any("prompt “Write a Python program" in row["heading"] for row in rows)
    # Each row's workload line, under its config's label, says which prompt it measured.
    lines = [re.search(r'<div class="sub">([^<]*)</div>', row["html"]).group(1) for row in rows]
    assert sum("prompt “Summarise the plot" in line for line in lines) == 1
    entries = LeaderboardEntry.objects.filter(config__spec_label="draft-simple")
    assert entries.count() == 2 and len({e.ranking_key for e in entries}) == 2
    assert len({e.ranking_label for e in entries}) == 2


def test_rows_on_other_engine_releases_or_hardware_are_in_other_rankings(
    client, user, models, hardware, enqueued, make_result
):
    other_gpu = services.register_hardware(gpu_name="NVIDIA L40S", memory_bytes=48 * 2**30)
    measure(user, hardware, make_result, 4, [100.0, 104.0], release="b11000")
    measure(user, hardware, make_result, 5, [90.0, 94.0], release="b11434")
    measure(user, other_gpu, make_result, 3, [60.0, 64.0], release="b11434")

    rows = board(text(client.get("/")))

    # Three rankings (GPU and release each part them), each with its rank 1 under a heading
    # that names its GPU and release.
    assert sorted((row["heading"].split(" · ")[-2:], row["rank"]) for row in rows) == [
        (["H200", "b11000"], "1"),
        (["H200", "b11434"], "1"),
        (["L40S", "b11434"], "1"),
    ]
    keys = LeaderboardEntry.objects.filter(config__spec_label="draft-simple").values_list(
        "ranking_key", flat=True
    )
    assert len(set(keys)) == 3


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
    # Shown with the flagged rows, but only the two measured configs carry a rank.
    ranked = [row for row in board(everything) if row["rank"] not in ("–", "base")]
    assert [(row["rank"], n_max_of(row["config"])) for row in ranked] == [("1", 4), ("2", 3)]
    assert "kept-off-table" not in everything
    assert "Show the main ranking only" in everything


def test_results_from_an_older_engine_release_are_marked_stale(
    client, user, models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0], release="b11000")
    measure(user, hardware, make_result, 5, [90.0, 94.0], release="b11434")
    rows = board(text(client.get("/")))

    old = [row for row in rows if row["heading"].endswith("b11000")]
    new = [row for row in rows if row["heading"].endswith("b11434")]
    assert old and all(">stale</span>" in row["html"] and "b11000" in row["html"] for row in old)
    assert new and not any(">stale</span>" in row["html"] for row in new)


def test_a_retired_build_leaves_the_ranking_and_comes_back_with_the_toggle(
    client, user, models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0], release="b11000")
    services.retire_engine_build(release="b11000", note="miscompiled CUDA kernels")

    assert "n_max 4" not in section(text(client.get("/")), "ranking")
    assert "retired build" in section(text(client.get("/")), "kept-off-table")
    everything = text(client.get("/", {"all": "1"}))
    assert "retired build" in section(everything, "ranking")
    # Shown again, but off the ranking: no rank number on a retired build's rows.
    assert [row["rank"] for row in board(everything)] == ["–", "base"]
    assert not LeaderboardEntry.objects.filter(rank__isnull=False).exists()


def test_search_narrows_the_leaderboard_to_matching_rows(client, two_close_configs):
    ranking = section(text(client.get("/", {"q": "n_max 3"})), "ranking")
    assert "n_max 3" in ranking and "n_max 4" not in ranking


def test_the_leaderboard_paginates(
    client, two_close_configs, user, hardware, make_result, monkeypatch
):
    measure(user, hardware, make_result, 5, [80.0, 84.0])
    monkeypatch.setattr("leaderboard.views.board.PAGE_SIZE", 2)
    first, second = text(client.get("/")), text(client.get("/", {"page": "2"}))
    assert "page 1 of 2" in first and 'href="?&amp;page=2"' in first
    assert [row["rank"] for row in board(first)] == ["1", "2"]
    # The second page goes on with the same ranking's place 3, under its heading again.
    (third,) = board(second)
    assert (third["rank"], n_max_of(third["config"])) == ("3", 5)
    assert third["heading"] == board(first)[0]["heading"] != ""


def test_the_nmax_view_crowns_the_fastest_ranked_n_max_and_never_a_degenerate_sweep(
    client, two_close_configs, h200, hardware
):
    # The H200 sweep of a random-weight model: synthetic acceptance and degenerate output.
    sweep = LeaderboardEntry.objects.filter(config__target_name="qwen3-8b-random")
    assert sweep.filter(config__n_max=12).exists() and all(e.degenerate for e in sweep)
    # Asked for it, the page does not offer it: it answers from ranked rows only, here the
    # tiny target's two measured configs.
    page = text(client.get("/nmax/", {"target": "qwen3-8b-random", "hardware": hardware.slug}))
    assert '<option value="qwen3-8b-random"' not in page
    assert '<option value="tiny-qwen3" selected>' in page
    (series,) = json_data(page, "nmax-data")["types"]
    assert not {e.config.key for e in sweep} & set(series["keys"])
    assert series["n_max"] == [3, 4] and series["best_n_max"] == 4
    assert 'draft-simple <span class="sub">best n_max 4</span>' in page
    assert re.search(r'<tr class="best"> <td class="num">4 <span class="badge good">best', page)
    # Two requests each, 101 against 102 tok/s: Welch's test cannot tell them apart; at the
    # same acceptance there is no "lower acceptance, faster" finding to claim either.
    assert re.search(r'<td class="num">3 <span class="badge tie"[^>]*>indistinguishable', page)
    assert 'class="finding"' not in page and 'id="no-finding"' in page
    assert not sweep.filter(rank__isnull=False).exists()


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
    # The stored decode rate, by llama-bench's convention: the n - 1 tokens after the first
    # over the generation time (llama-server's own timings in the record).
    first = rows[0]
    decode = (int(first["predicted_n"]) - 1) / float(first["predicted_ms"]) * 1000
    assert float(first["decode_tokens_per_second"]) == pytest.approx(decode)
    assert first["decode_tokens_per_second"].startswith("206.55")


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
    # n_max 3 is a tok/s behind: Welch's test on the two configs' requests cannot tell them
    # apart, so it is named beside the answer, and the baseline is given as the denominator.
    assert re.search(r'class="sub best-tied">Indistinguishable from it .*?n_max 3</a>', found)
    assert re.search(r'class="sub best-baseline">Without drafting .*?51\.0 tok/s', found)
    assert found.count('class="best-answer"') == 1
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
    assert 'href="/models/tiny-qwen3/">tiny-qwen3</a>' in models
    # Both pages rank as the board does: n_max 4 first, n_max 3 second and labelled.
    for page in (detail, model):
        assert [(row["rank"], n_max_of(row["config"]), row["label"]) for row in board(page)] == [
            ("1", 4, ""),
            ("2", 3, "≈ leader"),
        ]
        assert ">indistinguishable from the leader</span>" in page
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
