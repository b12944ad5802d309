"""The answers' rules on plain rows: a baseline can be the answer, a noisy row is never crowned,
and a 0.64x speedup is never 'as good as' a 1.29x one."""

from __future__ import annotations

from types import SimpleNamespace

from leaderboard.verdicts.advice import best_n_max, fitting_answers


def row(pk, tps, *, speculative=True, ranking="r1", noisy=False, sd=1.0, n=5, rank=1):
    return SimpleNamespace(
        pk=pk,
        tokens_per_second=tps,
        config_mean=tps,
        config_stdev=sd,
        config_n=n,
        noisy=noisy,
        rank=rank if speculative else None,
        ranking_key=ranking,
        ranking_label=f"ranking {ranking}",
        workload_label="quick",
        config=SimpleNamespace(is_speculative=speculative, n_max=pk),
    )


def test_a_faster_baseline_is_the_answer_and_a_slower_draft_is_not_called_as_good():
    baseline = row(1, 48.5, speculative=False)
    ngram = row(2, 36.4)
    [answer] = fitting_answers([ngram, baseline])
    assert answer.best is baseline and answer.baseline is None
    assert answer.tied == [] and answer.others == [ngram]


def test_answers_never_cross_rankings_and_the_baseline_is_each_ones_denominator():
    quick_base, quick_draft = row(1, 50.0, speculative=False), row(2, 64.5)
    cats_base, cats_ngram = (
        row(3, 40.0, speculative=False, ranking="r2"),
        row(4, 51.6, ranking="r2"),
    )
    answers = {
        a.ranking_label: a
        for a in fitting_answers([quick_base, quick_draft, cats_base, cats_ngram])
    }
    assert (
        answers["ranking r1"].best is quick_draft and answers["ranking r1"].baseline is quick_base
    )
    assert answers["ranking r2"].best is cats_ngram and answers["ranking r2"].baseline is cats_base


def test_rows_the_test_cannot_tell_apart_are_tied_and_a_noisy_row_is_never_the_answer():
    fast_noisy = row(1, 120.0, noisy=True, sd=70.0)
    clean = row(2, 100.0, sd=2.0)
    close = row(3, 99.5, sd=2.0)
    [answer] = fitting_answers([fast_noisy, clean, close])
    assert answer.best is clean and close in answer.tied


def test_the_best_n_max_is_never_a_noisy_or_unranked_point():
    points = [row(4, 200.0, noisy=True), row(8, 150.0, rank=None), row(12, 140.0)]
    assert best_n_max(points).pk == 12
    assert best_n_max(points[:2]) is None
