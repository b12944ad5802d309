"""Ranks and ties within one ranking: the rank follows the point estimate, ties are labels."""

from __future__ import annotations

from leaderboard.verdicts.ranking import Contender, standings
from leaderboard.verdicts.statistics import Sample


def test_a_faster_row_never_carries_a_worse_rank_than_a_slower_one():
    rows = [
        Contender(id=1, figure=100.0, sample=Sample(100.0, 2.0, 5)),
        # Its spread reaches the leader's: it is labelled alike, and keeps its place.
        Contender(id=2, figure=95.0, sample=Sample(95.0, 30.0, 3)),
        Contender(id=3, figure=98.0, sample=Sample(98.0, 0.5, 5)),
    ]
    found = standings(rows)
    assert [found[i].rank for i in (1, 3, 2)] == [1, 2, 3]
    assert found[2].like_leader is True and found[2].rank == 3


def test_the_labels_say_whether_the_test_tells_a_row_from_the_leader_and_the_row_above():
    found = standings(
        [
            Contender(id=1, figure=100.0, sample=Sample(100.0, 1.0, 5)),
            Contender(id=2, figure=99.5, sample=Sample(99.5, 1.0, 5)),
            Contender(id=3, figure=80.0, sample=Sample(80.0, 1.0, 5)),
        ]
    )
    assert found[1].like_leader is None and found[1].like_above is None
    assert found[2].like_leader is True and found[2].like_above is True
    assert found[3].like_leader is False and found[3].like_above is False


def test_a_row_without_spread_keeps_its_place_and_its_tie_is_unknown():
    found = standings(
        [
            Contender(id=1, figure=100.0, sample=Sample(100.0, 1.0, 5)),
            Contender(id=2, figure=120.0, sample=Sample(120.0, None, 1)),
        ]
    )
    assert found[2].rank == 1 and found[1].rank == 2
    assert found[1].like_leader is None


def test_equal_figures_share_their_competition_rank():
    found = standings(
        [Contender(id=i, figure=f, sample=None) for i, f in ((1, 50.0), (2, 50.0), (3, 40.0))]
    )
    assert [found[i].rank for i in (1, 2, 3)] == [1, 1, 3]


def _reference_like(first, second) -> bool | None:
    """Welch's test at 5% straight from scipy, on summary_sample's samples; None without spread."""
    from scipy import stats

    if first is None or second is None or not (first.has_spread and second.has_spread):
        return None
    if first.stdev == 0 and second.stdev == 0:
        return first.mean == second.mean
    found = stats.ttest_ind_from_stats(
        first.mean, first.stdev, first.n, second.mean, second.stdev, second.n, equal_var=False
    )
    return bool(found.pvalue >= 0.05)


def test_rows_given_as_columns_stand_as_scipy_and_a_plain_sort_place_them():
    import random

    from leaderboard.verdicts.ranking import standing_columns
    from leaderboard.verdicts.statistics import SampleColumns, summary_sample

    rng = random.Random(3)
    rows = [
        (
            index,
            rng.choice([90.0, 100.0, 100.0, 110.0, 120.5]),
            rng.choice([None, 95.0, 100.0, 105.0, float("nan"), True, "100"]),
            rng.choice([None, 0.0, 1.0, 4.0, -1.0, float("inf")]),
            rng.choice([None, 0, 1, 2, 5, 30, 2.5, -3]),
        )
        for index in range(400)
    ]
    columns = standing_columns(
        ids=[row[0] for row in rows],
        figures=[row[1] for row in rows],
        samples=SampleColumns.of_summaries(*([row[k] for row in rows] for k in (2, 3, 4))),
    )
    ordered = sorted(rows, key=lambda row: (-row[1], row[0]))
    samples = {row[0]: summary_sample(*row[2:]) for row in rows}
    expected = {ordered[0][0]: (1, None, None)}
    for index, row in enumerate(ordered[1:], start=1):
        rank = 1 + sum(other[1] > row[1] for other in rows)
        leader, above = ordered[0][0], ordered[index - 1][0]
        expected[row[0]] = (
            rank,
            _reference_like(samples[row[0]], samples[leader]),
            _reference_like(samples[row[0]], samples[above]),
        )
    assert columns == expected
    assert {value for standing in columns.values() for value in standing[1:]} == {None, True, False}
    # The same rows one by one (Contender, Sample) stand alike.
    one_by_one = standings([Contender(id=i, figure=f, sample=samples[i]) for i, f, *_ in rows])
    assert {i: (s.rank, s.like_leader, s.like_above) for i, s in one_by_one.items()} == expected
