"""The pages that answer a question, on small crafted boards, each reading the verdicts
(`leaderboard.verdicts`): /best/ answers per ranking with the baseline as its denominator and
never sets a 0.64x config beside a 1.29x one, with the peak memory measured; /nmax/ never
crowns a degenerate or noisy run; /context/ pairs each depth with its baseline; /compare/ sets
configs side by side with a Welch interval; /hardware/ compares GPUs for a target; the hardware
and model pages rank as the board does; each defines its numbers."""

from __future__ import annotations

import re

import pytest

from leaderboard import selectors, services
from leaderboard.models import Job, LeaderboardEntry, Run
from leaderboard.services.board import mark_test_weights
from tests.support.baselines import with_baseline_section
from tests.support.h200_results import DEPTH_FILES
from tests.support.measured_configs import degenerate_result, draft_simple, measure, quick_config
from tests.support.pages import board_rows, embedded, n_max_of, text

TARGET = "tiny-qwen3"
REPEATED = "a a a a a a a a"


def measured(user, hardware, make_result, data: dict, decode: list[float], **options) -> Job:
    """A config measured with its paired baseline beside it ([50, 50.5, 49.5] tok/s, the same
    outputs: lossless)."""
    job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, decode, draft=(40, 30), tau=2.2, **options),
            make_result(job.config.baseline.key, [50.0, 50.5, 49.5]),
        ),
    )
    job.refresh_from_db()
    return job


# /best/ -------------------------------------------------------------------------------------------


@pytest.fixture
def demo_board(user, ranked_models, hardware, enqueued, make_result) -> dict[str, Job]:
    """The demo board's shape: draft-simple at 0.64x on the quick protocol's prompt and
    ngram-simple at 1.29x on another prompt, both widely spread (their 95% intervals overlap
    each other's and the baselines'), each workload with its own baseline."""
    return {
        "slow": measured(
            user, hardware, make_result, quick_config("draft-simple", 4), [20.0, 32.0, 44.0]
        ),
        "fast": measured(
            user,
            hardware,
            make_result,
            quick_config("ngram-simple", 4, prompt=REPEATED),
            [50.0, 64.5, 79.0],
        ),
    }


def best_sections(page: str) -> list[str]:
    return re.findall(r'<section class="best-answer"[^>]*>(.*?)</section>', page)


def test_best_answers_per_ranking_and_never_sets_a_slow_config_beside_a_fast_one(
    client, demo_board
):
    slow, fast = demo_board["slow"].config, demo_board["fast"].config
    assert LeaderboardEntry.objects.get(config=slow).speedup == pytest.approx(0.64)
    assert LeaderboardEntry.objects.get(config=fast).speedup == pytest.approx(1.29)

    answers = selectors.best_config_for(target_name=TARGET, memory_bytes=10**10)

    # One answer per ranking, every row of an answer from that ranking.
    assert len(answers) == 2
    for answer in answers:
        rows = [answer.best, *answer.tied, *answer.others]
        rows += [answer.baseline] if answer.baseline else []
        assert {row.ranking_key for row in rows} == {answer.best.ranking_key}
    by_best = {answer.best.config.key: answer for answer in answers}
    assert set(by_best) == {fast.key, slow.baseline.key}
    # Where no drafting is faster, no drafting is the answer, not the 0.64x config.
    assert by_best[slow.baseline.key].baseline is None
    assert by_best[fast.key].baseline.config.key == fast.baseline.key

    page = text(client.get("/best/", {"target": TARGET, "memory_gb": "10"}))
    assert "as good a choice" not in page
    sections = best_sections(page)
    assert len(sections) == 2
    # The n-gram config's runner sent token-id prompts of the text's length (3 tokens), never
    # the text: its ranking says so.
    (token_ids,) = [s for s in sections if "distinct token-id prompts of 3 tokens" in s]
    (default,) = [s for s in sections if s is not token_ids]
    answer = re.search(r'<p class="answer"[^>]*>(.*?)</p>', token_ids).group(1)
    assert fast.key in answer and "1.29×" in answer
    # The 0.64x config and the other workload's baseline are nowhere in the 1.29x one's answer.
    assert slow.key not in token_ids and slow.baseline.key not in token_ids
    denominator = re.search(r'<p class="sub best-baseline">(.*?)</p>', token_ids).group(1)
    assert "the denominator" in denominator and fast.baseline.key in denominator
    default_answer = re.search(r'<p class="answer"[^>]*>(.*?)</p>', default).group(1)
    assert slow.baseline.key in default_answer and "no drafting" in default_answer
    assert slow.key not in default_answer and fast.key not in default
    assert 'class="ranking-heading"' in token_ids and 'class="ranking-heading"' in default


def test_best_reads_its_rows_in_the_same_queries_however_many_answer(
    client, demo_board, user, hardware, make_result
):
    # The page reads its rows as values (selectors.board.FitRow), in one query however many
    # answer.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def rows_read() -> int:
        client.get("/best/", {"target": TARGET, "memory_gb": "10"})
        services.raise_board_version()  # the next request computes the answers again
        with CaptureQueriesContext(connection) as captured:
            page = client.get("/best/", {"target": TARGET, "memory_gb": "10"})
        assert page.status_code == 200
        return sum('"leaderboard_leaderboardentry"' in q["sql"] for q in captured.captured_queries)

    assert rows_read() == 1
    added = [
        measured(
            user,
            hardware,
            make_result,
            quick_config("ngram-simple", n_max, prompt=REPEATED),
            decode,
        ).config
        for n_max, decode in ((3, [60.0, 66.0, 72.0]), (5, [58.0, 61.0, 64.0]), (6, [30.0, 31.0]))
    ]
    page = text(client.get("/best/", {"target": TARGET, "memory_gb": "10"}))
    assert sum(config.key in page for config in added) >= 2 and "peak" in page
    assert rows_read() == 1


def test_best_shows_the_fastest_answers_first_and_counts_the_rest(client, demo_board, monkeypatch):
    monkeypatch.setattr("leaderboard.views.answers.BEST_ANSWERS", 1)
    fast = demo_board["fast"].config

    page = text(client.get("/best/", {"target": TARGET, "memory_gb": "10"}))

    (section,) = best_sections(page)
    assert fast.key in section  # the 1.29x answer is the faster of the two rankings'
    assert "1 more ranking (other workloads, GPUs or releases)" in page


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


# Peak memory on /compare/ and /best/, as the run page says it -------------------------------------


@pytest.fixture
def memory_configs(user, models, hardware, enqueued, make_result) -> list[str]:
    """Three measured draft-simple configs of real weights (the fake results' GPU memory is
    123,456,789 bytes): two alike, which the best page names as indistinguishable, and one
    clearly slower, in its table beside the baseline."""
    mark_test_weights(models=models.values(), test_weights=False)
    jobs = [
        measure(user, hardware, make_result, n_max, decode)
        # Two requests each, as their baseline's: each output compared, all lossless.
        for n_max, decode in ((4, [100.0, 101.0]), (3, [100.0, 101.0]), (2, [70.0, 71.0]))
    ]
    return [job.config.key for job in jobs]


def set_memory(*, peak: int, kind: str) -> None:
    """Every run's measured memory, and every row's (a row's is its best run's)."""
    Run.objects.update(peak_memory_bytes=peak, memory_kind=kind)
    LeaderboardEntry.objects.update(peak_memory_bytes=peak)
    services.raise_board_version()


def compare_memory_row(client, keys: list[str]) -> list[str]:
    page = client.get("/compare/", {"keys": ",".join(keys)}).content.decode()
    row = re.search(r"<tr><th>Peak memory</th>(.*?)</tr>", page).group(1)
    return re.findall(r'<td class="num">(.*?)</td>', row)


def best_page(client) -> dict[str, str]:
    page = client.get("/best/", {"target": "tiny-qwen3", "memory_gb": "10"}).content.decode()
    # One ranking (one workload, GPU and release): one answer.
    assert page.count('<section class="best-answer"') == 1
    answer = re.search(r'<p class="answer" id="best-answer">(.*?)</p>', page).group(1)
    tied = re.search(r'<p class="sub best-tied">(.*?)</p>', page).group(1)
    table = re.search(
        r'<table class="best-table compact best-slower">(.*?)</table>', page, re.S
    ).group(1)
    body = table[table.index("<tbody>") :]
    # Config, tok/s, interval, then the peak memory.
    cells = re.findall(r"<tr><td>.*?</td>(?:<td[^>]*>.*?</td>){2}<td[^>]*>(.*?)</td>", body)
    return {"answer": answer, "tied": tied, "cells": cells}


def test_gpu_memory_under_a_gibibyte_reads_in_mib_on_both_pages(client, memory_configs):
    assert compare_memory_row(client, memory_configs) == ["117.7 MiB GPU memory"] * 3
    best = best_page(client)
    assert "peak 117.7 MiB GPU memory" in best["answer"]
    assert ", 117.7 MiB GPU memory)" in best["tied"]
    # The clearly slower config and the baseline (a candidate too: no drafting).
    assert best["cells"] == ["117.7 MiB GPU memory"] * 2
    assert "0.1 GiB" not in best["answer"] + best["tied"]


def test_process_memory_of_a_cpu_build_says_so_on_both_pages(client, memory_configs):
    set_memory(peak=3 * 2**30 + 2**29, kind="process")
    assert compare_memory_row(client, memory_configs) == ["3.5 GiB process memory"] * 3
    best = best_page(client)
    assert "peak 3.5 GiB process memory" in best["answer"]
    assert ", 3.5 GiB process memory)" in best["tied"]
    assert best["cells"] == ["3.5 GiB process memory"] * 2
    assert "GPU memory" not in best["answer"] + best["tied"]


def test_no_memory_measured_shows_no_figure_on_either_page(client, memory_configs):
    set_memory(peak=0, kind="")
    assert compare_memory_row(client, memory_configs) == ["–"] * 3
    best = best_page(client)  # a row of 0 bytes still fits any memory
    assert "peak" not in best["answer"] and "GiB" not in best["answer"]
    assert "MiB" not in best["tied"] and "GiB" not in best["tied"]
    assert best["cells"] == ["–"] * 2


# /nmax/ -------------------------------------------------------------------------------------------


def test_nmax_never_crowns_a_degenerate_or_noisy_run(
    client, user, ranked_models, hardware, enqueued, make_result
):
    clean = measured(
        user, hardware, make_result, quick_config("draft-simple", 2), [100.0, 101.0, 99.0]
    )
    # Faster on average, but one request of three took far longer: noisy.
    noisy = measured(
        user, hardware, make_result, quick_config("draft-simple", 3), [20.0, 200.0, 170.0]
    )
    looped = services.submit_config(
        owner=user, data=quick_config("draft-simple", 4), hardware_slug=hardware.slug
    )
    services.record_result(
        job_id=looped.pk, result=degenerate_result(make_result, looped.config.key, [900.0] * 3)
    )
    assert LeaderboardEntry.objects.get(config=noisy.config).noisy
    assert LeaderboardEntry.objects.get(config=looped.config).degenerate

    page = text(client.get("/nmax/", {"target": TARGET, "hardware": hardware.slug}))

    [series] = embedded(page, "nmax-data")["types"]
    assert series["best_n_max"] == 2
    rows = {row["n_max"]: row for row in series["rows"]}
    assert rows[2]["best"] and not rows[3]["best"] and "noisy" in rows[3]["flags"]
    assert 4 not in rows  # a degenerate row is no answer at all
    assert "best n_max 2" in page
    best_rows = re.findall(r'<tr class="best">(.*?)</tr>', page)
    assert len(best_rows) == 1 and clean.config.key in best_rows[0]
    assert looped.config.key not in page.split('id="nmax-data"')[0]

    # With only the noisy point left, nothing is crowned, and the page says why.
    LeaderboardEntry.objects.filter(config=clean.config).update(synthetic=True)
    services.raise_board_version()
    page = text(client.get("/nmax/", {"target": TARGET, "hardware": hardware.slug}))
    [series] = embedded(page, "nmax-data")["types"]
    assert series["best_n_max"] is None and not any(row["best"] for row in series["rows"])
    assert "no best n_max: every point is noisy" in page and '<tr class="best">' not in page


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
    (series,) = embedded(page, "nmax-data")["types"]
    assert not {e.config.key for e in sweep} & set(series["keys"])
    assert series["n_max"] == [3, 4] and series["best_n_max"] == 4
    # Named by what the series holds fixed: its type and its draft (the target's own file).
    assert 'draft-simple · self-draft <span class="sub">best n_max 4</span>' in page
    assert re.search(r'<tr class="best"> <td class="num">4 <span class="badge good">best', page)
    # Two requests each, 101 against 102 tok/s: Welch's test cannot tell them apart; at the
    # same acceptance there is no "lower acceptance, faster" finding to claim either.
    assert re.search(r'<td class="num">3 <span class="badge tie"[^>]*>indistinguishable', page)
    assert 'class="finding"' not in page and 'id="no-finding"' in page
    assert not sweep.filter(rank__isnull=False).exists()


def test_the_nmax_view_without_data_says_so(client, db):
    assert "No results with an n_max" in text(client.get("/nmax/"))


# /context/ ----------------------------------------------------------------------------------------


def test_the_context_view_has_one_line_per_config_with_speedup_per_depth(client, h200):
    page = text(client.get("/context/"))

    data = embedded(page, "context-data")
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
    data = embedded(text(client.get("/context/")), "context-data")
    line = next(line for line in data["lines"] if line["label"].startswith("qwen3-27b"))
    assert line["speedup"][0] == pytest.approx(2.590, abs=1e-3)


def test_each_depth_sweep_holds_its_runners_own_baseline_stored_as_a_run_of_its_own(h200):
    speculative = Run.objects.exclude(config__spec_label="none")
    sweeps = [run for run in speculative if len(run.raw_result["points"]) > 1]
    assert len(sweeps) == len(DEPTH_FILES)
    # The sweeps carry a speedup over the baseline their runner measured; the n_max runs none.
    assert [run for run in speculative if run.speedup is not None] == sweeps
    baselines = Run.objects.filter(config__spec_label="none")
    assert {run.config_id for run in baselines} == {run.config.baseline_id for run in sweeps}
    assert baselines.count() == 2


# /compare/ ----------------------------------------------------------------------------------------


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
    data = embedded(page, "compare-data")
    assert data["tokens_per_second"] == [pytest.approx(102.0), pytest.approx(101.0), 51.0]
    assert len(data["acceptance_by_position"]) == 3
    assert 'data-chart-kind="acceptance"' in page and 'id="compare-table"' in page


def test_compare_explains_a_wrong_number_of_keys_or_an_unknown_key_inline(client, db):
    one = text(client.get("/compare/", {"keys": "abc"}))
    unknown = text(client.get("/compare/", {"keys": "abc,def"}))
    assert "Give two to four different config keys." in one
    assert "Unknown config keys: abc, def." in unknown


def test_the_nmax_context_and_compare_pages_define_their_numbers(
    client, user, ranked_models, hardware, enqueued, make_result
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
    # The interval and n are the figure's own (its best batch's requests), as on the board.
    assert "interval of the tok/s shown (its best batch's mean), over that batch's requests" in nmax
    assert 'title="the requests of its best batch">n<' in nmax
    assert re.search(r"[0-9.]+ – [0-9.]+ ?<div class=\"sub\">over requests</div>", nmax)
    assert "over batch means" not in nmax
    assert "over the batch's requests" not in nmax
    assert 'title="draft tokens accepted / drafted, pooled over the batch">Acceptance' in nmax
    assert 'title="1 + accepted draft tokens per verify step">tau' in nmax
    assert "requests of different depths are never pooled into one interval here" in context
    assert "geometric mean" in context
    assert "<strong>Acceptance</strong>: draft tokens accepted / draft tokens drafted" in compare
    assert "pooled across 4 depths: not one measurement" in compare


# /hardware/ and /models/ --------------------------------------------------------------------------


def test_the_hardware_page_compares_gpus_for_a_target(client, three_configs, user, make_result):
    other = services.register_hardware(gpu_name="NVIDIA RTX 4090", memory_bytes=24 * 2**30)
    measure(user, other, make_result, 4, [70.0, 71.0])
    page = client.get("/hardware/").content.decode()
    data = embedded(page, "hardware-comparison-data")
    # The workload's query value is Config.workload (the protocol and its parameters).
    workload = three_configs["jobs"][4].config.workload
    assert data["target"] == "tiny-qwen3" and data["protocol"] == workload
    row = LeaderboardEntry.objects.get(
        config=three_configs["jobs"][4].config, hardware=three_configs["hardware"]
    )
    assert workload.startswith("quick:") and data["workload"] == row.workload_label
    assert data["workload"].startswith("quick, ") and "prompt “" in data["workload"]
    rows = {row["slug"]: row for row in data["rows"]}
    assert [row["slug"] for row in data["rows"]] == [three_configs["hardware"].slug, other.slug]
    h200 = rows[three_configs["hardware"].slug]
    assert h200["tokens_per_second"] == pytest.approx(102.0)
    assert h200["ci95_low"] < 102.0 < h200["ci95_high"] and h200["interval_basis"] == "requests"
    assert h200["speedup"] == pytest.approx(102 / 51)
    assert h200["speedup_ci95_low"] < h200["speedup"] < h200["speedup_ci95_high"]
    assert rows[other.slug]["speedup"] == pytest.approx(70.5 / 51)
    assert 'id="gpu-comparison-table"' in page and 'data-chart-kind="speedup"' in page
    assert page.count('data-chart-source="hardware-comparison-data"') == 2


def test_the_hardware_comparison_falls_back_for_unknown_choices_and_empty_boards(
    client, three_configs
):
    data = embedded(
        client.get("/hardware/?target=%00nope&protocol=<b>").content.decode(),
        "hardware-comparison-data",
    )
    workload = three_configs["jobs"][4].config.workload
    assert data["target"] == "tiny-qwen3" and data["protocol"] == workload
    # A bare protocol name picks that protocol's widest workload.
    bare = client.get("/hardware/?protocol=quick").content.decode()
    assert embedded(bare, "hardware-comparison-data")["protocol"] == workload
    LeaderboardEntry.objects.update(test_weights=True)
    page = client.get("/hardware/").content.decode()
    assert "No ranked decode results to compare GPUs on yet." in page


def test_hardware_and_model_pages_rank_their_results(client, two_close_configs, hardware):
    listing = text(client.get("/hardware/"))
    detail = text(client.get(f"/hardware/{hardware.slug}/"))
    models = text(client.get("/models/"))
    model = text(client.get("/models/tiny-qwen3/"))

    assert f'href="/hardware/{hardware.slug}/">H200</a>' in listing
    assert 'href="/models/tiny-qwen3/">tiny-qwen3</a>' in models
    # Both pages rank as the board does: n_max 4 first, n_max 3 second and labelled.
    for page in (detail, model):
        assert [
            (row["rank"], n_max_of(row["config"]), row["label"]) for row in board_rows(page)
        ] == [
            ("1", 4, ""),
            ("2", 3, "≈ leader"),
        ]
        assert ">indistinguishable from the leader</span>" in page
    assert client.get("/models/nothing-here/").status_code == 404
    assert client.get("/hardware/nothing-here/").status_code == 404


def test_the_best_pages_choices_come_finished_from_the_view_and_follow_the_row_set(
    client, user, hardware, ranked_models, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    query = {"target": "tiny-qwen3", "hardware": hardware.slug}
    page = text(client.get("/best/", query))
    assert "tiny-qwen3" in page and hardware.slug in page

    # A GPU measured for the first time (the row set changes) is offered at once.
    other = services.register_hardware(gpu_name="RTX 5090", memory_bytes=32 * 2**30)
    measure(user, other, make_result, 4, [90.0, 94.0])
    assert other.slug in text(client.get("/best/", query))


def test_compare_shows_a_config_without_a_board_row_as_dashes_not_a_server_error(
    client, two_close_configs, user, hardware
):
    leader, _ = two_close_configs
    queued = services.submit_config(
        owner=user, data=draft_simple(6), hardware_slug=hardware.slug
    ).config
    assert not LeaderboardEntry.objects.filter(config=queued).exists()

    response = client.get("/compare/", {"keys": f"{leader.config.key},{queued.key}"})

    assert response.status_code == 200
    page = text(response)
    assert queued.key in page and "no results to compare" in page
