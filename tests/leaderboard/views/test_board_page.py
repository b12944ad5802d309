"""The front page, the leaderboard: one ranking per workload, tok/s definition, GPU and release,
each under its heading, with the baselines apart as denominators; ranks by the point estimate
with Welch labels ("≈ leader", "no interval") and trust flags; the rows kept off the ranking
and the toggle that shows them; search, filters and pages; every number's definition one hover
away; and the speedup chart of the chosen target and hardware."""

from __future__ import annotations

import csv
import functools
import html
import io
import re

import pytest

from leaderboard import selectors, services
from leaderboard.models import LeaderboardEntry
from leaderboard.services.board import mark_test_weights
from runner.stats import summarize
from tests.support.baselines import with_baseline_section
from tests.support.measured_configs import draft_simple, measure, measure_config
from tests.support.pages import (
    board_rows,
    class_texts,
    element_text,
    embedded,
    n_max_of,
    table_html,
    text,
)
from tests.support.protocol_results import categories_config, category_records
from tests.support.protocol_runs import import_concurrency_config
from tests.support.seed_kit import SEED_CSV

# Rows, filters and search -------------------------------------------------------------------------


def test_the_leaderboard_shows_rows_with_their_numbers_and_badges(client, measured_job):
    db_import = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000"
    )
    page = text(client.get("/"))

    assert "tiny-qwen3 · draft-simple · self-draft · n_max 4" in page
    assert "102.00" in page and "2.00×" in page and "75.0%" in page
    assert "qwen36-dflash15" in page and "3.60×" in page and "self-reported" in page
    assert "end-to-end (client wall time)" in page and "decode (server timings)" in page
    assert db_import.runs_created == 22


def test_the_leaderboard_filters_by_spec_type_and_sorts(client, measured_job):
    page = text(client.get("/", {"spec_type": "none", "ordering": "speedup"}))
    assert "tiny-qwen3 · baseline" in page
    assert "draft-simple · self-draft" not in page
    assert client.get("/", {"spec_type": "<script>", "ordering": "nonsense"}).status_code == 200


def test_search_narrows_the_leaderboard_to_matching_rows(client, two_close_configs):
    ranking = table_html(text(client.get("/", {"q": "n_max 3"})), "ranking")
    assert "n_max 3" in ranking and "n_max 4" not in ranking


def test_a_nul_in_the_search_box_is_dropped_not_sent_to_the_database(client, db):
    assert client.get("/", {"q": "a\x00b"}).status_code == 200


def test_the_leaderboard_paginates(
    client, two_close_configs, user, hardware, make_result, monkeypatch
):
    measure(user, hardware, make_result, 5, [80.0, 84.0])
    monkeypatch.setattr("leaderboard.views.board.PAGE_SIZE", 2)
    first, second = text(client.get("/")), text(client.get("/", {"page": "2"}))
    assert "page 1 of 2" in first and re.search(r'href="\?[^"]*\bpage=2"', first)
    assert [row["rank"] for row in board_rows(first)] == ["1", "2"]
    # The second page goes on with the same ranking's place 3, under its heading again.
    (third,) = board_rows(second)
    assert (third["rank"], n_max_of(third["config"])) == ("3", 5)
    assert third["heading"] == board_rows(first)[0]["heading"] != ""


# Rankings: one per workload, definition, GPU and release ------------------------------------------


def test_a_faster_row_never_ranks_below_a_slower_one_whose_interval_overlaps_the_leaders(
    client, user, ranked_models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 100.1, 100.2])  # 99.85 – 100.35
    measure(user, hardware, make_result, 3, [99.0, 99.1, 99.2])  # narrow, clearly slower
    # Slower still, but so wide that its interval (78 – 118) reaches the leader's.
    measure(user, hardware, make_result, 5, [90.0, 98.0, 106.0])

    rows = board_rows(text(client.get("/")))

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
    client, user, ranked_models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 100.1, 100.2])
    measure(user, hardware, make_result, 3, [99.0])  # one request: no interval
    measure(user, hardware, make_result, 5, [90.0, 98.0, 106.0])  # slower, overlapping

    rows = board_rows(text(client.get("/")))

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
    client, user, ranked_models, hardware, enqueued, make_result, make_protocol_result
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
    rows, baselines = board_rows(page), board_rows(page, "baselines-table")

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


def test_rows_of_one_label_on_other_workloads_get_their_own_heading_and_ranking(
    client, user, ranked_models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    other = draft_simple(4)
    other["protocol"] = other["protocol"] | {"prompt": "Summarise the plot of Hamlet in a page."}
    measure_config(user, hardware, make_result, other, [80.0, 84.0])

    rows = board_rows(text(client.get("/")))

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
    client, user, ranked_models, hardware, enqueued, make_result
):
    other_gpu = services.register_hardware(gpu_name="NVIDIA L40S", memory_bytes=48 * 2**30)
    measure(user, hardware, make_result, 4, [100.0, 104.0], release="b11000")
    measure(user, hardware, make_result, 5, [90.0, 94.0], release="b11434")
    measure(user, other_gpu, make_result, 3, [60.0, 64.0], release="b11434")

    rows = board_rows(text(client.get("/")))

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


def test_the_board_names_the_concurrency_ranking_beside_its_rank(client, concurrency_runs):
    page = text(client.get("/", {"protocol": "concurrency"}))
    # Named by what it measured: its rows rank only among configs of the same levels and lengths.
    assert 'class="ranking-heading"' in page and "concurrency 1–4 (3 levels), 64 in, 32 out" in page
    assert "crossover between 2 and 4" in page


# Rows kept off the ranking ------------------------------------------------------------------------


def test_the_include_flagged_view_shows_kept_off_rows_unranked(
    client, user, ranked_models, hardware, enqueued, make_result
):
    # The tiny random-weight target, marked as test weights again: its rows say nothing.
    mark_test_weights(models=[ranked_models["tiny-qwen3"]])
    measure_config(
        user, hardware, make_result, draft_simple(4), [100.0, 104.0], baseline=(5800.0, 5828.0)
    )

    everything = text(client.get("/", {"all": "1"}))

    # The tiny model's baseline at 5,814 tok/s is shown, as a baseline, never as #1.
    assert [(row["rank"], row["config"]) for row in board_rows(everything)] == [
        ("base", "tiny-qwen3 · baseline"),
        ("–", "tiny-qwen3 · draft-simple · self-draft · n_max 4"),
    ]
    assert "5,814.00" in table_html(everything, "ranking") or "5814.00" in table_html(
        everything, "ranking"
    )
    assert not re.search(r'<td class="rank">\d', everything)
    assert "No ranked results match" in text(client.get("/"))
    assert not LeaderboardEntry.objects.filter(rank__isnull=False).exists()

    # Cleared, the rows join the ranking; marked again, they leave it and lose their rank.
    mark_test_weights(models=[ranked_models["tiny-qwen3"]], test_weights=False)
    assert [
        (row["rank"], n_max_of(row["config"])) for row in board_rows(text(client.get("/")))
    ] == [("1", 4)]
    mark_test_weights(models=[ranked_models["tiny-qwen3"]])
    assert [row["rank"] for row in board_rows(text(client.get("/", {"all": "1"})))] == ["base", "–"]
    assert not LeaderboardEntry.objects.filter(rank__isnull=False).exists()


def test_the_main_ranking_keeps_synthetic_and_self_reported_results_apart_until_toggled(
    client, two_close_configs, h200
):
    services.import_leaderboard_csv(content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000")
    page = text(client.get("/"))

    ranking, kept_off = table_html(page, "ranking"), table_html(page, "kept-off-table")
    assert "draft-simple · self-draft · n_max 4" in ranking
    assert "qwen36-dflash15" not in ranking and "synthetic" not in ranking
    assert "qwen36-dflash15" in kept_off and "self-reported" in kept_off
    assert "qwen3-8b-random · draft-dflash" in kept_off and "degenerate" in kept_off
    assert 'id="toggle-flagged" href="?all=1"' in page

    everything = text(client.get("/", {"all": "1"}))
    assert "qwen36-dflash15" in table_html(everything, "ranking")
    # Shown with the flagged rows, but only the two measured configs carry a rank.
    ranked = [row for row in board_rows(everything) if row["rank"] not in ("–", "base")]
    assert [(row["rank"], n_max_of(row["config"])) for row in ranked] == [("1", 4), ("2", 3)]
    assert "kept-off-table" not in everything
    assert "Show the main ranking only" in everything


def test_results_from_an_older_engine_release_are_marked_stale(
    client, user, ranked_models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0], release="b11000")
    measure(user, hardware, make_result, 5, [90.0, 94.0], release="b11434")
    rows = board_rows(text(client.get("/")))

    old = [row for row in rows if row["heading"].endswith("b11000")]
    new = [row for row in rows if row["heading"].endswith("b11434")]
    assert old and all(">stale</span>" in row["html"] and "b11000" in row["html"] for row in old)
    assert new and not any(">stale</span>" in row["html"] for row in new)


def test_a_retired_build_leaves_the_ranking_and_comes_back_with_the_toggle(
    client, user, ranked_models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0], release="b11000")
    services.retire_engine_build(release="b11000", note="miscompiled CUDA kernels")

    assert "n_max 4" not in table_html(text(client.get("/")), "ranking")
    assert "retired build" in table_html(text(client.get("/")), "kept-off-table")
    everything = text(client.get("/", {"all": "1"}))
    assert "retired build" in table_html(everything, "ranking")
    # Shown again, but off the ranking: no rank number on a retired build's rows.
    assert [row["rank"] for row in board_rows(everything)] == ["–", "base"]
    assert not LeaderboardEntry.objects.filter(rank__isnull=False).exists()


def test_test_weight_rows_are_labelled_and_kept_off_the_main_ranking(
    client, user, models, hardware, enqueued, make_result
):
    # The tiny fixtures are random weights, and their GGUF files say so.
    assert all(model.test_weights for model in models.values())
    job = measure(user, hardware, make_result, 4, [100.0, 104.0])
    assert LeaderboardEntry.objects.get(config=job.config).test_weights

    page = text(client.get("/"))
    assert 'id="ranking"' not in page
    # Apart from the ranking and from the other kept-off rows, under a heading in words.
    assert ">test weights</span>" in board_row(page, "n_max 4", table="test-weights-table")
    assert 'id="test-weights">Test weights, not a real model' in page
    assert client.get("/api/v1/leaderboard").json()["count"] == 0
    widened = client.get("/api/v1/leaderboard", {"source": "all"}).json()["results"]
    assert widened and all(row["test_weights"] for row in widened)

    # An admin clearing the mark puts the rows back into the ranking.
    mark_test_weights(models=models.values(), test_weights=False)
    assert "n_max 4" in board_row(text(client.get("/")), "n_max 4")


# What each number means ---------------------------------------------------------------------------


def board_row(page: str, label_part: str, table: str = "ranking") -> str:
    body = re.search(rf'<table class="board" id="{table}">(.*?)</table>', page).group(1)
    return next(row for row in re.findall(r"<tr.*?</tr>", body) if label_part in row)


def titles(row: str) -> list[str]:
    return re.findall(r'<td class="num[^"]*" title="([^"]*)"', row)


def test_acceptance_and_tau_carry_their_definitions_beside_tok_s(
    client, draft_simple_job, hardware
):
    for url in ("/", f"/hardware/{hardware.slug}/"):
        page = text(client.get(url))
        legend = re.search(r'<p class="note legend" id="ranking-legend">(.*?)</p>', page).group(1)

        assert "<strong>Decode tok/s</strong>: generated tokens over the server's own" in legend
        assert "<strong>End-to-end tok/s</strong>: completion tokens over the client's" in legend
        assert (
            "<strong>Acceptance</strong>: draft tokens accepted / draft tokens drafted, pooled "
            "over the batch." in legend
        )
        assert "<strong>Tau</strong>: 1 + accepted draft tokens per verify step" in legend
        assert "<strong>95% interval</strong>: Student-t confidence interval" in legend


def test_every_number_of_a_row_has_its_definition_n_and_interval_one_hover_away(
    client, draft_simple_job
):
    entry = LeaderboardEntry.objects.get(config=draft_simple_job.config)
    run, baseline = entry.best_run, entry.baseline_entry

    tps, ci95, n, speedup, acceptance, tau = titles(board_row(text(client.get("/")), "n_max 4"))

    assert tps.startswith("decode tok/s: generated tokens") and "best batch's 2 requests" in tps
    assert ci95.startswith("95% interval: Student-t") and "(n 2)" in ci95
    assert n.startswith("n: measured requests")
    assert speedup.endswith(
        f"{entry.tokens_per_second:,.2f} over {baseline.tokens_per_second:,.2f} tok/s"
    )
    assert acceptance.endswith(f"{run.draft_accepted:,} of {run.draft_tokens:,} drafted")
    assert tau.endswith(f"{run.draft_accepted:,} accepted over {run.verify_steps:,} verify steps")
    assert run.draft_tokens > 0 and run.verify_steps > 0


def test_a_batch_of_one_request_says_it_has_no_interval(client, user, ranked_models, hardware,
                                                        enqueued, make_result):  # fmt: skip
    job = measure(user, hardware, make_result, 5, [120.0])
    entry = LeaderboardEntry.objects.get(config=job.config)
    assert entry.n == 1 and entry.ci95_low is None

    (row,) = [r for r in client.get("/api/v1/leaderboard").json()["results"] if r["n"] == 1]
    assert row["ci95_scope"] == "none"
    assert "none, fewer than two requests" in row["definitions"]["ci95"]
    assert (
        "fewer than two requests in the batch"
        in titles(board_row(text(client.get("/")), "n_max 5"))[1]
    )


def test_a_row_says_best_of_k_batches_with_the_pooled_mean_and_its_interval_beside_it(
    client, user, ranked_models, hardware, enqueued, make_result
):
    first = measure(user, hardware, make_result, 4, [100.0, 104.0])
    again = services.submit_config(
        owner=user, data=draft_simple(4, runs=2), hardware_slug=hardware.slug
    )
    services.record_result(job_id=again.pk, result=make_result(again.config.key, [200.0, 204.0]))
    entry = LeaderboardEntry.objects.get(config=first.config)
    pooled = summarize([100.0, 104.0, 200.0, 204.0])
    assert entry.runs_count == 2 and entry.tokens_per_second == 202.0
    assert entry.pooled_mean == pytest.approx(pooled["mean"]) and entry.pooled_n == 4

    row = board_row(text(client.get("/")), "n_max 4")
    assert "best of 2 batches" in row
    assert (
        f"pooled {pooled['mean']:,.2f} ({max(pooled['ci95_low'], 0):,.1f} – "
        f"{pooled['ci95_high']:,.1f}) · n 4" in row
    )
    (api,) = [
        r
        for r in client.get("/api/v1/leaderboard").json()["results"]
        if r["config_key"] == first.config.key
    ]
    assert api["best_of_batches"] == 2 and api["pooled_n"] == 4
    assert api["pooled_mean"] == pytest.approx(pooled["mean"])
    assert api["pooled_ci95_low"] == pytest.approx(pooled["ci95_low"])
    assert api["pooled_ci95_high"] == pytest.approx(pooled["ci95_high"])
    assert "best of 2 batches" in api["definitions"]["runs_count"]


# The speedup chart --------------------------------------------------------------------------------


def test_the_front_page_embeds_a_speedup_chart_of_the_ranked_configs(client, three_configs):
    page = client.get("/").content.decode()
    assert page.index('id="speedup-chart"') < page.index('id="ranking"')
    chart = embedded(page, "speedup-data")
    assert chart["target"] == "tiny-qwen3" and chart["hardware"] == three_configs["hardware"].slug
    assert chart["definition"] == "decode"
    assert chart["other_ranking_rows"] == 0 and chart["other_rankings"] == 0
    assert chart["ranking_label"].endswith("· decode tok/s · H200 · b11434")
    speedups = [point["speedup"] for point in chart["points"]]
    assert speedups == pytest.approx([102 / 51, 101 / 51, 60.25 / 51])
    for point in chart["points"]:
        assert point["ci95_low"] < point["speedup"] < point["ci95_high"]
        assert point["label"].startswith("draft-simple · self-draft · n_max ")
    assert "leaderboard/vendor/chart.umd.min.js" in page and "leaderboard/charts.js" in page
    assert "<script>" not in page  # no inline scripts: the data is JSON, charts.js draws it


def test_the_chart_follows_the_selected_target_and_hardware(
    client, three_configs, user, make_result
):
    other = services.register_hardware(gpu_name="NVIDIA RTX 4090", memory_bytes=24 * 2**30)
    measure(user, other, make_result, 4, [70.0, 71.0])
    chart = embedded(client.get(f"/?hardware={other.slug}").content.decode(), "speedup-data")
    assert chart["hardware"] == other.slug and len(chart["points"]) == 1
    assert chart["chosen"] == {"target": False, "hardware": True}
    # Nothing chosen: the first GPU and target in the answers' order (GPU name, then target).
    assert (
        embedded(client.get("/").content.decode(), "speedup-data")["hardware"]
        == three_configs["hardware"].slug
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
    client, three_configs, user, make_result
):
    fastest = LeaderboardEntry.objects.get(config=three_configs["jobs"][4].config)
    LeaderboardEntry.objects.filter(pk=fastest.pk).update(degenerate=True)
    # Faster than every row, but on another prompt: another ranking, never drawn beside them.
    elsewhere = measure_on_prompt(
        user, three_configs["hardware"], make_result, 4, [300.0, 304.0], "a a a a a a a a"
    )
    services.raise_board_version()
    chart = selectors.speedup_chart()
    assert [p["key"] for p in chart["points"]] == [
        three_configs["jobs"][3].config.key,
        three_configs["jobs"][2].config.key,
    ]
    assert elsewhere.config.key not in {p["key"] for p in chart["points"]}
    assert chart["other_ranking_rows"] == 1 and chart["other_rankings"] == 1

    mark_test_weights(models=[three_configs["jobs"][3].config.target], test_weights=True)
    assert selectors.speedup_chart() is None
    page = client.get("/").content.decode()
    assert 'id="speedup-chart"' not in page and embedded(page, "speedup-data") is None


def test_a_board_without_speedups_has_no_chart_and_still_shows(
    client, user, ranked_models, hardware
):
    assert selectors.speedup_chart() is None
    response = client.get("/?target=nothing-like-it&hardware=nor-this")
    assert response.status_code == 200 and 'id="speedup-chart"' not in response.content.decode()


# Concurrency rankings -------------------------------------------------------------------------


@pytest.fixture
def record(user, hardware, make_protocol_result, ranked_models):
    """record(levels, speculative tok/s, baseline tok/s, **protocol changes): a concurrency
    config imported with its paired baseline, on ranked models; its key."""
    return functools.partial(import_concurrency_config, user, hardware, make_protocol_result)


def test_the_board_names_each_ranking_by_what_it_measured(client, record):
    record([1, 2], [100.0, 150.0], [60.0, 120.0])
    record([1, 2, 4], [30.0, 40.0, 50.0], [20.0, 30.0, 40.0])

    page = client.get("/", {"protocol": "concurrency"}).content.decode()

    # Each ranking under its own heading: the workload, what is ranked, the GPU and release.
    table = re.search(r'<table class="board" id="ranking">(.*?)</table>', page, re.S).group(1)
    headings = re.findall(r'<tr class="ranking-heading"><th [^>]*>([^<]+)</th></tr>', table)
    assert headings == [
        "concurrency 1–2 (2 levels), 64 in, 32 out · aggregate tok/s at the lowest level"
        " · H200 · b11434",
        "concurrency 1–4 (3 levels), 64 in, 32 out · aggregate tok/s at the lowest level"
        " · H200 · b11434",
    ]


# The answer at a glance, the denominators and the downloads ----------------------------------------


def test_the_front_page_answers_the_fastest_draft_per_gpu_and_target_as_the_verdicts_decide(
    client, user, three_configs, make_result
):
    other = services.register_hardware(gpu_name="NVIDIA RTX 4090", memory_bytes=24 * 2**30)
    measure(user, other, make_result, 2, [30.0, 31.0])  # slower than its baseline of 51
    page = text(client.get("/"))
    glance = element_text(page, "glance")

    # One answer per GPU and target, each the verdicts' leading draft of its ranking.
    h200, rtx = class_texts(page, "glance-answer")
    leader = selectors.draft_advice(target_name="tiny-qwen3")
    by_gpu = {table.hardware.gpu_name: table for table in leader}
    assert by_gpu["H200"].drafts[0].entry.config.n_max == 4
    assert "draft-simple · tiny-qwen3 · n_max 4 2.00× (1.78× – 2.25×) faster than no draft" in h200
    # Each figure names its workload: its ranking's label.
    assert f"on {by_gpu['H200'].ranking_label}" in h200
    # Where every draft is slower than none, the answer is no draft.
    assert by_gpu["RTX 4090"].none_pays
    assert rtx.startswith("RTX 4090 · tiny-qwen3 no draft") and "0.60×" in rtx
    assert "Best for my GPU" in glance and "best for this GPU" in glance
    assert page.index('id="glance"') < page.index('id="ranking"')


def test_a_noisy_answer_says_so_at_a_glance(client, user, ranked_models, hardware, make_result):
    measure(user, hardware, make_result, 4, [20.0, 200.0])  # one request ten times the other
    assert LeaderboardEntry.objects.get(config__n_max=4).noisy
    [answer] = class_texts(text(client.get("/")), "glance-answer")
    assert answer.count("noisy") == 1 and "n_max 4" in answer


def test_a_board_of_test_weights_alone_says_it_has_no_answer_yet(client, measured_job):
    glance = element_text(text(client.get("/")), "glance")
    assert glance.startswith("Fastest draft per GPU and target Best for my GPU")
    assert "No answer yet" in glance and "test-weight rows" in glance
    assert "tiny-qwen3 ·" not in glance


def test_each_ranking_carries_its_baseline_as_the_denominator_under_its_heading(
    client, three_configs
):
    page = text(client.get("/"))
    ranking = table_html(page, "ranking")
    heading, denominator = re.search(
        r'<tr class="ranking-heading"><th [^>]*>([^<]+)</th></tr>\s*'
        r'<tr class="denominator"><td colspan="10">(.*?)</td></tr>',
        ranking,
        re.S,
    ).groups()
    assert heading.startswith("quick, 64 out, prompt")
    words = re.sub(r"<[^>]+>", "", denominator)
    # The denominator is the baseline row's own figure, and the baseline is no ranked row.
    assert words.startswith("Baseline, no drafting: 51.00 tok/s")
    assert "each speedup below divides a row's tok/s by the baseline measured with it" in words
    assert [row["rank"] for row in board_rows(page)] == ["1", "2", "3"]


def test_the_board_links_downloads_of_the_rows_it_shows(client, three_configs, ranked_models):
    page = client.get("/", {"q": "n_max 3"}).content.decode()
    csv_url = html.unescape(re.search(r'id="download-csv" href="([^"]+)"', page).group(1))
    json_url = html.unescape(re.search(r'id="download-json" href="([^"]+)"', page).group(1))
    assert csv_url.startswith("/api/v1/exports/leaderboard.csv?")
    assert json_url.startswith("/api/v1/exports/leaderboard.json?")

    rows = list(csv.DictReader(io.StringIO(client.get(csv_url).content.decode())))
    assert [(row["label"], row["rank"]) for row in rows] == [
        ("tiny-qwen3 · draft-simple · self-draft · n_max 3", "2")
    ]
    [row] = rows
    assert float(row["speedup_ci95_low"]) < float(row["speedup"]) < float(row["speedup_ci95_high"])
    assert row["fidelity"] == LeaderboardEntry.objects.get(config__n_max=3, rank=2).fidelity
    assert [r["label"] for r in client.get(json_url).json()] == [row["label"]]

    # With the flagged rows included, the downloads carry them too, unranked.
    mark_test_weights(models=ranked_models.values())
    page = client.get("/", {"all": "1"}).content.decode()
    json_url = html.unescape(re.search(r'id="download-json" href="([^"]+)"', page).group(1))
    every = client.get(json_url).json()
    assert all(r["test_weights"] and r["rank"] is None for r in every)
    assert len(every) == LeaderboardEntry.objects.count() == 4


def test_a_visitor_not_signed_in_gets_the_pages_bytes_again_until_the_board_changes(
    client, user, ranked_models, hardware, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    first = client.get("/")
    again = client.get("/")
    assert first.content == again.content and b"Sign in" in first.content
    assert first["ETag"] == again["ETag"]
    # Another address is another page (the sign-in link names it).
    assert b"next=/%3Fq%3Dn_max" in client.get("/", {"q": "n_max"}).content

    # A new measurement changes the board: the new page, never the kept bytes.
    measure(user, hardware, make_result, 4, [150.0, 154.0])
    assert b"152.00" in client.get("/").content

    # A signed-in user's page is rendered for them (their name, the sign-out form).
    client.force_login(user)
    mine = client.get("/").content
    assert user.get_username().encode() in mine and b"Sign out" in mine


def test_the_board_reads_its_rows_relations_for_the_page_not_row_by_row(
    client, user, hardware, make_result, models
):
    """Rows recorded before the pairing kept its batch read their paired baseline row's best
    batch: for the page's rows at once (one query), never one row at a time."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from leaderboard.models import Hardware
    from tests.support.board_rows import board_row
    from tests.support.measured_configs import measured_run

    a_batch = measured_run(user, hardware, make_result, [100.0, 101.0])
    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    baseline = board_row(kind, "baseline", 50.0, spec_label="none")
    LeaderboardEntry.objects.filter(pk=baseline.pk).update(best_run=a_batch)
    for index in range(8):
        row = board_row(kind, f"draft {index}", 100.0 + index)
        LeaderboardEntry.objects.filter(pk=row.pk).update(
            baseline_entry=baseline, baseline_run=None
        )
    services.raise_board_version()  # rows written directly: the board reads them again
    with CaptureQueriesContext(connection) as read:
        page = client.get("/", {"hardware": kind.slug})
    assert page.status_code == 200 and "draft 7" in page.content.decode()
    one_by_one = re.compile(r'WHERE "leaderboard_leaderboardentry"\."id" = \d+ LIMIT')
    assert not [q["sql"] for q in read.captured_queries if one_by_one.search(q["sql"])]
