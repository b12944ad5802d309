"""Ranks as the board stores them (selectors.ranks): each page row's rank read for that page only
matches the ranking of every row (the rules spelled out here over the stored rows, Welch's test
from scipy), a faster row never ranks below a slower one, and one request keeps its place; the
filter choices list each target once."""

from __future__ import annotations

import random

import pytest
from scipy import stats

from leaderboard import selectors
from leaderboard.models import Hardware, LeaderboardEntry
from leaderboard.selectors.ranks import PageRank
from tests.support.board_rows import board_row

ORDERINGS = list(selectors.LEADERBOARD_ORDERINGS)


@pytest.fixture
def many_entries(db) -> list[LeaderboardEntry]:
    """Sixty rows of two tok/s definitions (two rankings) with repeated speeds, missing speedups
    and taus, intervals that reach the leader's, batches too small to have an interval at all,
    baselines and a few self-reported rows among them."""
    rng = random.Random(4)
    hardware = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    entries = []
    for index in range(60):
        speed = float(rng.choice([50, 60, 70, 80, 90, 99, 100]) + rng.choice([0, 0.5]))
        entries.append(
            board_row(
                hardware,
                f"config {index}",
                speed,
                canonical={"index": index},
                target_name=f"target-{index % 3}",
                spec_label=("draft-simple", "ngram", "none")[index // 3 % 3],
                tps_definition=rng.choice(["decode", "decode", "end-to-end"]),
                half=rng.choice([0.2, 1.0, 3.0]),
                # One batch in five has a single request: it has no interval at all.
                n=rng.choice([1, 5, 5, 5, 5]),
                self_reported=index % 11 == 0,
                speedup=rng.choice([None, 1.2, 1.5, 2.0, 2.5]),
                acceptance_rate=rng.choice([None, rng.random()]),
                tau=rng.choice([None, 2.0, 3.0]),
            )
        )
    return entries


def indistinguishable(row: LeaderboardEntry, other: LeaderboardEntry) -> bool | None:
    """Welch's test at 5% on two rows' config samples, straight from scipy; None without spread."""
    if row.config_n < 2 or other.config_n < 2:
        return None
    found = stats.ttest_ind_from_stats(
        row.config_mean, row.config_stdev, row.config_n,
        other.config_mean, other.config_stdev, other.config_n, equal_var=False,
    )  # fmt: skip
    return bool(found.pvalue >= 0.05)


def full_ranking(ordering: str) -> dict[int, PageRank]:
    """The rules spelled out over every stored row: a row is ranked only among the competing
    rows of its ranking (speculative, not flagged; a filter narrows the rows shown, never the
    ranking), by competition rank on the sorted field; no value, baseline or flag, no rank.
    Sorted by tok/s, each ranked row but the leader is labelled by Welch's test against the
    leader and the row above (None where a side has one request)."""
    rows = list(LeaderboardEntry.objects.select_related("config"))
    competing = [r for r in rows if r.config.spec_label != "none" and not r.self_reported]
    ranks: dict[int, PageRank] = {}
    for row in rows:
        value = getattr(row, ordering)
        if row not in competing or value is None:
            ranks[row.pk] = PageRank(None)
            continue
        peers = [other for other in competing if other.ranking_key == row.ranking_key]
        higher = sum(
            getattr(other, ordering) is not None and getattr(other, ordering) > value
            for other in peers
        )
        if ordering != "tokens_per_second":
            ranks[row.pk] = PageRank(higher + 1)
            continue
        order = sorted(peers, key=lambda other: (-other.tokens_per_second, other.pk))
        place = order.index(row)
        ranks[row.pk] = PageRank(
            higher + 1,
            like_leader=indistinguishable(row, order[0]) if place else None,
            like_above=indistinguishable(row, order[place - 1]) if place else None,
        )
    return ranks


@pytest.mark.parametrize("ordering", ORDERINGS)
@pytest.mark.parametrize("target", ["", "target-1"])
def test_ranks_read_for_one_page_match_the_ranking_of_every_row(many_entries, ordering, target):
    entries = selectors.leaderboard_entries(target=target, ordering=ordering)
    everything = list(entries)
    expected = full_ranking(ordering)
    assert {row.tps_definition for row in everything} == {"decode", "end-to-end"}
    assert len({row.ranking_key for row in everything}) == 2
    if ordering == "tokens_per_second":
        labels = [rank.like_leader for rank in expected.values() if rank.rank not in (None, 1)]
        assert True in labels and False in labels and None in labels, "the fixture should vary"
    else:
        assert any(getattr(row, ordering) is None for row in everything), "and rows without it"
    assert any(row.self_reported for row in everything), "and flagged rows"
    assert any(not row.config.is_speculative for row in everything), "and baselines"
    assert any(rank.rank is None for rank in expected.values()), "and rows without a rank"
    for offset in range(0, len(everything), 7):
        page = everything[offset : offset + 7]
        ranks = selectors.page_ranks(entries, page, offset=offset, ordering=ordering)
        assert ranks == {row.pk: expected[row.pk] for row in page}, (ordering, offset)


def test_a_faster_row_never_ranks_below_a_slower_one_and_one_request_keeps_its_place(
    many_entries,
):
    rows = list(LeaderboardEntry.objects.select_related("config"))
    ranked = [row for row in rows if row.rank is not None]

    # Only speculative, unflagged rows carry a rank; each ranking has its rank 1.
    assert ranked and all(r.config.is_speculative and not r.self_reported for r in ranked)
    assert all(r.rank is None for r in rows if not r.config.is_speculative or r.self_reported)
    assert {r.ranking_key for r in ranked if r.rank == 1} == {r.ranking_key for r in ranked}
    for row in ranked:
        for other in ranked:
            if (
                other.ranking_key == row.ranking_key
                and other.tokens_per_second > row.tokens_per_second
            ):
                assert other.rank < row.rank, (other.pk, row.pk)
    # A one-request row is ranked by its figure, never moved down, and ties with nothing.
    single = [row for row in ranked if row.n == 1]
    assert single
    for row in single:
        faster = [
            other
            for other in ranked
            if other.ranking_key == row.ranking_key
            and other.tokens_per_second > row.tokens_per_second
        ]
        assert row.rank == len(faster) + 1
        assert row.like_leader is None and row.like_above is None
    # The main board leaves the baselines out: they are the denominators, listed apart.
    board = selectors.leaderboard_entries(ranked_only=True)
    assert not board.filter(config__spec_label="none").exists()
    assert set(board.values_list("pk", flat=True)) == {row.pk for row in ranked}


def test_filter_choices_list_each_target_once(many_entries):
    choices = selectors.leaderboard_filter_choices()
    assert [value for value, _ in choices["target"]] == ["target-0", "target-1", "target-2"]
    assert [value for value, _ in choices["hardware"]] == ["gpu-a"]
