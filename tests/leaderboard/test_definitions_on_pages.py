"""Definitions on the page: every number's definition, n and interval one hover or one line away
on the pages and in the API, the best-of-k rule disclosed beside the pooled mean, and
test-weight rows labelled and kept off the main ranking."""

from __future__ import annotations

import html
import re

import pytest

from leaderboard import services
from leaderboard.models import LeaderboardEntry, Run
from leaderboard.services.board import mark_test_weights
from runner.stats import summarize
from tests.support.measured_configs import draft_simple, measure


def text(response) -> str:
    return re.sub(r"\s+", " ", html.unescape(response.content.decode()))


def board_row(page: str, label_part: str, table: str = "ranking") -> str:
    body = re.search(rf'<table class="board" id="{table}">(.*?)</table>', page).group(1)
    return next(row for row in re.findall(r"<tr.*?</tr>", body) if label_part in row)


def titles(row: str) -> list[str]:
    return re.findall(r'<td class="num[^"]*" title="([^"]*)"', row)


@pytest.fixture
def real_models(models):
    """The tiny fixtures cleared of their test-weights mark, so their rows are ranked."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


@pytest.fixture
def measured(user, real_models, hardware, enqueued, make_result):
    return measure(user, hardware, make_result, 4, [100.0, 104.0])


def test_acceptance_and_tau_carry_their_definitions_beside_tok_s(client, measured, hardware):
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


def test_every_number_of_a_row_has_its_definition_n_and_interval_one_hover_away(client, measured):
    entry = LeaderboardEntry.objects.get(config=measured.config)
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


def test_the_api_row_carries_each_numbers_definition_n_and_interval(client, measured):
    entry = LeaderboardEntry.objects.get(config=measured.config)
    (row,) = [
        r
        for r in client.get("/api/v1/leaderboard").json()["results"]
        if r["config_key"] == entry.config.key
    ]

    assert set(row["definitions"]) == {
        "tokens_per_second", "ci95", "n", "speedup", "acceptance_rate", "tau", "runs_count",
        "joules_per_token", "roofline",
    }  # fmt: skip
    assert row["definitions"]["joules_per_token"].startswith("J/token: NVML's energy counter")
    assert row["definitions"]["roofline"].startswith("roofline: mean decode tok/s over the")
    assert row["definitions"]["acceptance_rate"].startswith("acceptance: draft tokens accepted")
    assert row["definitions"]["tau"].startswith("tau: 1 + accepted draft tokens per verify step")
    assert row["acceptance_draft_tokens"] == entry.best_run.draft_tokens
    assert row["acceptance_accepted_tokens"] == entry.best_run.draft_accepted
    assert row["tau_verify_steps"] == entry.best_run.verify_steps
    assert row["ci95_scope"] == "requests" and row["n"] == 2
    assert row["baseline_tokens_per_second"] == entry.baseline_entry.tokens_per_second
    assert row["depths"] == []


def test_a_batch_of_one_request_says_it_has_no_interval(client, user, real_models, hardware,
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
    client, user, real_models, hardware, enqueued, make_result
):
    first = measure(user, hardware, make_result, 4, [100.0, 104.0])
    again = services.submit_config(owner=user, data=draft_simple(4), hardware_slug=hardware.slug)
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


def test_test_weight_rows_are_labelled_and_kept_off_the_main_ranking(
    client, user, models, hardware, enqueued, make_result
):
    # The tiny fixtures are random weights, and their GGUF files say so.
    assert all(model.test_weights for model in models.values())
    job = measure(user, hardware, make_result, 4, [100.0, 104.0])
    assert LeaderboardEntry.objects.get(config=job.config).test_weights

    page = text(client.get("/"))
    assert 'id="ranking"' not in page
    assert ">test weights</span>" in board_row(page, "n_max 4", table="kept-off-table")
    assert client.get("/api/v1/leaderboard").json()["count"] == 0
    widened = client.get("/api/v1/leaderboard", {"source": "all"}).json()["results"]
    assert widened and all(row["test_weights"] for row in widened)

    # An admin clearing the mark puts the rows back into the ranking.
    mark_test_weights(models=models.values(), test_weights=False)
    assert "n_max 4" in board_row(text(client.get("/")), "n_max 4")


def test_the_nmax_context_and_compare_pages_define_their_numbers(
    client, user, real_models, hardware, enqueued, make_result
):
    from tests.support.h200_results import load_h200_results

    # The n_max page answers from ranked rows only (the stored H200 files are synthetic): a
    # measured sweep of two n_max, one of them measured twice (its interval over batch means).
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    again = measure(user, hardware, make_result, 4, [110.0, 112.0])
    measure(user, hardware, make_result, 3, [90.0, 93.0])
    assert LeaderboardEntry.objects.get(config=again.config).interval_basis == "batch means"
    load_h200_results(owner=user, hardware=hardware)
    nmax = text(client.get("/nmax/", {"target": "tiny-qwen3", "hardware": hardware.slug}))
    context = text(client.get("/context/"))
    # The two 4-depth DFlash runs (8B and 27B), side by side.
    keys = [
        run.config.key
        for run in Run.objects.filter(config__protocol="depth", config__spec_label="draft-dflash")
        if len(run.raw_result["points"]) == 4
    ]
    assert len(keys) == 2
    compare = text(client.get("/compare/", {"keys": ",".join(keys)}))

    assert 'title="decode tok/s: generated tokens over the server' in nmax
    # The interval and n are the config's (batch means here), and each row says which.
    assert "over its batch means when it has several batches" in nmax
    assert 'title="the n of its interval: batches, or requests of its one batch">n<' in nmax
    assert re.search(r"[0-9.]+ – [0-9.]+ ?<div class=\"sub\">over batch means</div>", nmax)
    assert re.search(r"[0-9.]+ – [0-9.]+ ?<div class=\"sub\">over requests</div>", nmax)
    assert "over the batch's requests" not in nmax
    assert 'title="draft tokens accepted / drafted, pooled over the batch">Acceptance' in nmax
    assert 'title="1 + accepted draft tokens per verify step">tau' in nmax
    assert "requests of different depths are never pooled into one interval here" in context
    assert "geometric mean" in context
    assert "<strong>Acceptance</strong>: draft tokens accepted / draft tokens drafted" in compare
    assert "pooled across 4 depths: not one measurement" in compare
