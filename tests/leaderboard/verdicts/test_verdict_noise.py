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
