"""Noisy batches: an outlier request, an interval reaching 0, a tau over few verify steps."""

from __future__ import annotations

from leaderboard.verdicts.noise import (
    FEW_VERIFY_STEPS,
    Request,
    batch_noise,
    few_steps_note,
    outliers,
    reaches_zero,
)
from leaderboard.verdicts.statistics import sample_of


def requests(*speeds: float, point: int | None = 0, tokens: int = 64) -> list[Request]:
    return [
        Request(index=i, point=point, tokens_per_second=speed, wall_s=tokens / speed)
        for i, speed in enumerate(speeds)
    ]


def test_one_request_of_three_taking_45_s_is_an_outlier_and_named_in_words():
    # 64 tokens in 44.8 s against 2.4-2.6 s: the issue's quick run.
    batch = requests(64 / 2.5, 64 / 44.8, 64 / 2.4)
    found = outliers(batch, protocol="quick")
    assert [outlier.request.index for outlier in found] == [1]
    text = found[0].text()
    assert "request 1 took 44.8 s" in text
    assert "the other 2 took 2.4–2.5 s" in text


def test_a_fast_outlier_counts_too():
    found = outliers(requests(20.0, 21.0, 19.5, 50.0), protocol="quick")
    assert [outlier.request.index for outlier in found] == [3]


def test_requests_within_a_factor_of_two_of_the_others_are_not_outliers():
    assert outliers(requests(20.0, 14.0, 26.0), protocol="quick") == []


def test_two_requests_cannot_say_which_is_the_odd_one():
    assert outliers(requests(20.0, 2.0), protocol="quick") == []


def test_outliers_are_judged_within_each_point_of_a_sweep():
    # A deep point is slower than a shallow one by design; within each point they agree.
    sweep = requests(40.0, 41.0, 39.0, point=0) + requests(10.0, 10.5, 9.8, point=1)
    assert outliers(sweep, protocol="depth") == []
    sweep += [Request(index=9, point=1, tokens_per_second=2.0)]
    assert [o.request.index for o in outliers(sweep, protocol="depth")] == [9]


def test_categories_prompts_differ_by_design_and_have_no_outliers():
    assert outliers(requests(20.0, 21.0, 2.0), protocol="categories") == []


def test_an_interval_reaching_zero_makes_a_quick_batch_noisy():
    noise = batch_noise(protocol="quick", sample=None, interval_lows=[0.0])
    assert noise.noisy
    assert any("reaches 0" in reason for reason in noise.reasons)
    assert "says little" in noise.advice
    assert batch_noise(protocol="quick", sample=None, interval_lows=[3.2]).noisy is False


def test_a_sweeps_interval_pools_depths_and_is_not_judged_by_reaching_zero():
    assert batch_noise(protocol="depth", sample=None, interval_lows=[-1.0]).noisy is False


def test_reaches_zero_reads_stored_values_through_the_one_rule():
    assert reaches_zero(-4.5) and reaches_zero(0)
    assert not reaches_zero(None) and not reaches_zero(float("nan")) and not reaches_zero(0.1)


def test_the_issues_run_is_noisy_by_every_rule_it_trips():
    batch = requests(64 / 2.5, 64 / 44.8, 64 / 2.4)
    sample = sample_of(r.tokens_per_second for r in batch)
    noise = batch_noise(protocol="quick", sample=sample, requests=batch, interval_lows=[0.0])
    assert noise.noisy and noise.outliers and noise.interval_reaches_zero and noise.spread
    # The outlier names the cause; the spread rule is not said twice.
    assert len(noise.reasons) == 2


def test_a_clean_batch_is_not_noisy_and_gives_no_advice():
    batch = requests(25.0, 25.5, 24.8)
    sample = sample_of(r.tokens_per_second for r in batch)
    noise = batch_noise(protocol="quick", sample=sample, requests=batch, interval_lows=[24.0])
    assert not noise.noisy and noise.reasons == [] and noise.advice == ""


def test_a_tau_over_few_verify_steps_says_so():
    assert few_steps_note(tau=17.0, verify_steps=2) == "tau 17.0 from 2 verify steps"
    assert few_steps_note(tau=3.0, verify_steps=1) == "tau 3.0 from 1 verify step"
    assert few_steps_note(tau=3.0, verify_steps=FEW_VERIFY_STEPS) == ""
    assert few_steps_note(tau=None, verify_steps=2) == ""


def test_few_verify_steps_is_a_note_not_noise():
    noise = batch_noise(protocol="quick", sample=None, tau=17.0, verify_steps=2)
    assert noise.few_steps and not noise.noisy


# A speedup over a noisy baseline (issue 44, point 7) -----------------------------------------


def measured_over_noisy_baseline(user, hardware, make_result):
    """Two draft-simple configs of the tiny target: n_max 6 at 300 and 304 tok/s over a baseline
    batch measured beside it at 20 and 200 tok/s (spread by more than half its mean: noisy), and
    n_max 4 at 100 and 104 over a clean one of 50 and 52; their rows, noisy-baseline one first."""
    from leaderboard.models import LeaderboardEntry
    from tests.support.measured_configs import draft_simple, measure, measure_config

    clean = measure(user, hardware, make_result, 4, [100.0, 104.0])
    noisy = measure_config(
        user, hardware, make_result, draft_simple(6), [300.0, 304.0], baseline=(20.0, 200.0)
    )
    return (
        LeaderboardEntry.objects.get(config=noisy.config),
        LeaderboardEntry.objects.get(config=clean.config),
    )


def test_a_speedup_over_a_noisy_baseline_is_flagged_and_never_crowned(
    client, user, ranked_models, hardware, make_result
):
    import csv
    import io

    from leaderboard import selectors
    from leaderboard.models import RankingSummary
    from leaderboard.selectors.board.glance import fastest_drafts
    from tests.support.pages import board_rows, class_texts, element_text, text

    on_noise, clean = measured_over_noisy_baseline(user, hardware, make_result)

    # The row's own batch is clean; the baseline batch its speedup divides by is not.
    assert not on_noise.noisy and on_noise.baseline_noisy
    assert on_noise.baseline_run.decode_mean == 110.0
    assert on_noise.speedup == 302.0 / 110.0 and on_noise.speedup > clean.speedup == 2.0
    assert not clean.noisy and not clean.baseline_noisy

    # No draft answer crowns it while a clean one exists: the model page's and the API's table,
    # the front page's answer and the summary it is chosen from.
    [table] = selectors.draft_advice(target_name="tiny-qwen3")
    assert table.drafts[0].entry.pk == clean.pk
    [answer] = fastest_drafts().answers
    assert answer.tables[0].drafts[0].entry.pk == clean.pk
    summary = RankingSummary.objects.get(ranking_key=clean.ranking_key)
    assert summary.lead_speedup == clean.speedup
    [words] = class_texts(text(client.get("/")), "glance-answer")
    assert "n_max 4 2.00×" in words and "noisy baseline" not in words

    # The board, the config page, the run page, the job page, the API and its exports say so.
    page = text(client.get("/"))
    shown = {row["config"]: row["html"] for row in board_rows(page)}
    assert "noisy baseline" in shown[on_noise.config.label]
    assert "noisy baseline" not in shown[clean.config.label]
    assert "noisy baseline" in element_text(
        text(client.get(f"/configs/{on_noise.config.key}/")), "standing-table"
    )
    run_page = text(client.get(f"/runs/{on_noise.best_run_id}/"))
    flag = element_text(run_page, "baseline-noise")
    assert flag.startswith("noisy baseline This speedup rests on a noisy baseline")
    assert (
        f"it divides by run {on_noise.baseline_run_id} of tiny-qwen3 · baseline, which is" in flag
    )
    assert "request 0 took 3.2 s (20.00 tok/s)" in flag
    assert "its 95% interval reaches 0 tok/s" in flag
    assert f'href="/submit/?from={on_noise.config.baseline.key}"' in run_page
    assert element_text(text(client.get(f"/runs/{clean.best_run_id}/")), "baseline-noise") is None
    job_page = text(client.get(f"/jobs/{on_noise.best_run.job_id}/"))
    assert "noisy baseline" in element_text(job_page, "job-speedup")

    rows = {row["label"]: row for row in client.get("/api/v1/leaderboard").json()["results"]}
    assert rows[on_noise.config.label]["baseline_noisy"] is True
    assert rows[clean.config.label]["baseline_noisy"] is False
    exported = csv.DictReader(io.StringIO(client.get("/api/v1/exports/leaderboard.csv").text))
    by_label = {row["label"]: row["baseline_noisy"] for row in exported}
    assert by_label == {on_noise.config.label: "True", clean.config.label: "False"}
    [group] = client.get("/api/v1/drafts", {"target": "tiny-qwen3"}).json()["groups"]
    [draft] = group["drafts"]
    assert draft["config_key"] == clean.config.key and draft["baseline_noisy"] is False


def test_where_every_speedup_rests_on_a_noisy_baseline_the_answer_says_so(
    client, user, ranked_models, hardware, make_result
):
    from tests.support.measured_configs import draft_simple, measure_config
    from tests.support.pages import class_texts, text

    measure_config(
        user, hardware, make_result, draft_simple(6), [300.0, 304.0], baseline=(20.0, 200.0)
    )
    [words] = class_texts(text(client.get("/")), "glance-answer")
    assert "n_max 6 2.75×" in words and words.count("noisy baseline") == 1
