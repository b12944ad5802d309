"""The answers' rules on plain rows: a baseline can be the answer, a noisy row (or one over a
noisy baseline) is never crowned, a 0.64x speedup is never 'as good as' a 1.29x one, and the
front page's first answer names every workload with a faster draft in its labels' order."""

from __future__ import annotations

from types import SimpleNamespace

from leaderboard.verdicts.advice import (
    WorkloadLead,
    answer_workloads,
    best_n_max,
    crownable,
    draft_tables,
    first_answer,
    fitting_answers,
    leading_speedup,
)


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


# The front page's first answer: every workload where a draft is faster, in a stable order ----


def lead(key: str, speedup: float | None, label: str | None = None) -> WorkloadLead:
    return WorkloadLead(ranking_key=key, ranking_label=label or f"quick {key}", speedup=speedup)


def test_every_workload_with_a_faster_draft_is_named_in_the_order_of_its_label():
    leads = [lead("c", 1.9), lead("a", 0.8), lead("b", 1.13), lead("d", 1.0), lead("e", None)]
    named, more = answer_workloads(leads, limit=5)
    # 1.0x is not faster than no drafting; the order is the labels', not the speedups'.
    assert [found.ranking_key for found in named] == ["b", "c"] and more == 0
    assert answer_workloads(reversed(leads), limit=5) == (named, 0)
    named, more = answer_workloads(leads, limit=1)
    assert [found.ranking_key for found in named] == ["b"] and more == 1


def test_where_no_workload_has_a_faster_draft_the_least_slow_alone_is_named():
    named, more = answer_workloads([lead("a", 0.6), lead("b", 0.93), lead("c", 0.93)], limit=5)
    assert [found.ranking_key for found in named] == ["b"] and more == 0
    assert answer_workloads([lead("a", None)], limit=5) == ([], 0)


def drafted(pk, speedup, *, noisy=False, baseline_noisy=False, ranking="r1", label=None):
    return SimpleNamespace(
        pk=pk,
        config_id=pk,
        speedup=speedup,
        speedup_ci95_low=speedup - 0.1,
        speedup_ci95_high=speedup + 0.1,
        noisy=noisy,
        baseline_noisy=baseline_noisy,
        rank=1,
        ranking_key=ranking,
        ranking_label=label or f"quick {ranking}",
        workload_label="quick",
        tps_definition="decode",
        get_tps_definition_display=lambda: "decode",
        engine_release="b1",
        hardware=SimpleNamespace(gpu_name="GPU"),
        config=SimpleNamespace(spec_label=f"type {pk}", draft_id=None, protocol="quick"),
    )


def test_a_speedup_over_a_noisy_baseline_leads_only_where_every_one_does():
    rows = [drafted(1, 2.7, baseline_noisy=True), drafted(2, 2.0), drafted(3, 2.4, noisy=True)]
    assert not crownable(rows[0]) and crownable(rows[1]) and not crownable(rows[2])
    assert leading_speedup(rows) == 2.0
    [table] = draft_tables(rows)
    assert [standing.entry.pk for standing in table.drafts][0] == 2
    assert leading_speedup([rows[0], rows[2]]) == 2.7


def test_the_first_answer_keeps_the_faster_tables_in_label_order_else_the_least_slow():
    tables = draft_tables(
        [drafted(1, 1.2, ranking="z"), drafted(2, 0.7, ranking="a"), drafted(3, 1.5, ranking="m")]
    )
    answer = first_answer(hardware="GPU", target="t", tables=tables, workloads=4)
    assert [table.ranking_key for table in answer.tables] == ["m", "z"]
    assert not answer.none_faster and answer.others == 2
    slower = draft_tables([drafted(1, 0.9, ranking="z"), drafted(2, 0.7, ranking="a")])
    answer = first_answer(hardware="GPU", target="t", tables=slower, workloads=2)
    assert answer.none_faster and [table.ranking_key for table in answer.tables] == ["z"]
