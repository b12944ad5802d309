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
