"""Ranks as the board stores them (selectors.board.ranks): each page row's rank read for that page
only matches the ranking of every row (the rules spelled out here over the stored rows, Welch's
test from scipy), a faster row never ranks below a slower one, and one request keeps its place; the
filter choices list each target once. Rankings compare only what is comparable (one per workload,
tok/s definition, GPU and release, each under its heading): ranks by the sorted field, kept-off
rows unranked, Welch labels instead of shared ranks and none without an interval; concurrency
rows rank only among rows measured alike, by aggregate tok/s at their lowest level."""

from __future__ import annotations

import functools
import random
import re

import pytest
from scipy import stats

from leaderboard import selectors, services
from leaderboard.models import Config, Hardware, LeaderboardEntry
from leaderboard.selectors.board.ranks import PageRank
from tests.support.board_rows import QUICK_DECODE, QUICK_END_TO_END, board_row
from tests.support.measured_configs import measure
from tests.support.pages import rank_labels, ranking, text
from tests.support.protocol_runs import (
    CONCURRENCY_SPECULATIVE,
    CONCURRENCY_SPEEDUPS,
    concurrency_key,
    import_concurrency_config,
)
from tests.support.seed_kit import SEED_CSV

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


# Rankings that compare only what is comparable: one ranking per workload, tok/s definition,
# GPU and release, each under its heading; ranks by the sorted field within it, kept-off rows
# unranked; Welch labels instead of shared ranks, none without an interval.


@pytest.fixture
def gpu(db) -> Hardware:
    return Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")


@pytest.mark.parametrize(
    ("ordering", "expected"),
    [
        ("speedup", [("1", "c"), ("2", "a"), ("3", "b"), ("–", "d")]),
        ("acceptance_rate", [("1", "b"), ("2", "c"), ("3", "a"), ("–", "d")]),
        ("tau", [("1", "d"), ("2", "b"), ("3", "a"), ("–", "c")]),
    ],
)
def test_sorting_by_speedup_acceptance_or_tau_ranks_rows_by_that_field(
    client, gpu, ordering, expected
):
    # tok/s order a > b > c > d, far apart: no tok/s rank could hide a wrong one.
    board_row(gpu, "a", 400.0, speedup=2.0, acceptance_rate=0.5, tau=2.0)
    board_row(gpu, "b", 300.0, speedup=1.5, acceptance_rate=0.9, tau=3.0)
    board_row(gpu, "c", 200.0, speedup=3.0, acceptance_rate=0.7, tau=None)
    board_row(gpu, "d", 100.0, speedup=None, acceptance_rate=None, tau=4.0)

    shown = ranking(text(client.get("/", {"ordering": ordering})))

    assert [(rank, label) for rank, _, label in shown] == expected
    assert {heading for _, heading, _ in shown} == {QUICK_DECODE}


def test_equal_values_of_the_sorted_field_share_their_competition_rank(client, gpu):
    for label, tps, acceptance in (("a", 400.0, 0.9), ("b", 300.0, 0.8), ("c", 200.0, 0.8)):
        board_row(gpu, label, tps, acceptance_rate=acceptance)
    board_row(gpu, "d", 500.0, acceptance_rate=0.5)

    shown = ranking(text(client.get("/", {"ordering": "acceptance_rate"})))

    assert [(rank, label) for rank, _, label in shown] == [
        ("1", "a"),
        ("2", "b"),
        ("2", "c"),
        ("4", "d"),
    ]


@pytest.mark.parametrize(
    ("ordering", "expected"),
    [
        (
            "tokens_per_second",
            [
                ("1", QUICK_DECODE, "measured a"),
                ("2", QUICK_DECODE, "measured b"),
                ("–", QUICK_END_TO_END, "seed claim"),
                ("1", QUICK_END_TO_END, "e2e fast"),
                ("2", QUICK_END_TO_END, "e2e slow"),
            ],
        ),
        (
            "speedup",
            [
                ("1", QUICK_DECODE, "measured a"),
                ("2", QUICK_DECODE, "measured b"),
                ("–", QUICK_END_TO_END, "seed claim"),
                ("1", QUICK_END_TO_END, "e2e slow"),
                ("2", QUICK_END_TO_END, "e2e fast"),
            ],
        ),
    ],
)
def test_the_all_results_view_numbers_decode_and_end_to_end_rows_separately(
    client, gpu, ordering, expected
):
    board_row(gpu, "e2e fast", 253.0, tps_definition="end-to-end", speedup=2.0)
    board_row(gpu, "measured a", 100.0, speedup=2.0)
    board_row(gpu, "measured b", 90.0, speedup=1.8)
    board_row(gpu, "e2e slow", 70.0, tps_definition="end-to-end", speedup=3.6)
    # The fastest and best speedup of all, but a claim: shown in the all-results view, unranked.
    board_row(
        gpu, "seed claim", 300.0, tps_definition="end-to-end", self_reported=True, speedup=9.0
    )

    page = text(client.get("/", {"all": "1", "ordering": ordering}))

    assert ranking(page) == expected
    # Every row says its definition where its tok/s is.
    table = re.search(r'id="ranking">(.*?)</table>', page).group(1)
    definitions = re.findall(r'class="sub tps-definition">([^<]+)<', table)
    assert definitions == [
        "end-to-end (client wall time)" if "end-to-end" in heading else "decode (server timings)"
        for _, heading, _ in expected
    ]
    assert LeaderboardEntry.objects.get(config__label="seed claim").rank is None


def test_the_seed_kits_end_to_end_imports_never_take_a_measured_rows_rank(client, gpu):
    services.import_leaderboard_csv(content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000")
    board_row(gpu, "measured", 100.0, speedup=2.0)

    shown = ranking(text(client.get("/", {"all": "1"})))

    measured = [(rank, heading) for rank, heading, label in shown if label == "measured"]
    imported = [(rank, heading) for rank, heading, label in shown if label != "measured"]
    assert measured == [("1", QUICK_DECODE)]
    # The seed kit's rows are claims: shown in the all-results view under their own heading
    # (their own workload, definition and GPU), and never numbered.
    assert len(imported) >= 10 and {rank for rank, _ in imported} == {"–"}
    assert all(
        h.startswith("seed kit CSV (unverified) · end-to-end tok/s · RTX PRO 6000")
        for _, h in imported
    )
    seed_rows = LeaderboardEntry.objects.filter(self_reported=True)
    assert seed_rows.count() == len(imported) and not seed_rows.filter(rank__isnull=False).exists()


def test_a_batch_of_one_request_keeps_its_place_and_says_it_has_no_interval(client, gpu):
    board_row(gpu, "leader", 100.0, half=5.0)
    board_row(gpu, "overlapping", 97.0, half=4.0)
    # One request at 99 tok/s: inside the leader's interval, but a single request has none.
    board_row(gpu, "one request", 99.0, n=1)

    page = text(client.get("/"))

    # In tok/s order and ranked by it: the single request is second, the slower overlapping
    # row third, labelled as indistinguishable from the leader rather than moved up.
    assert ranking(page) == [
        ("1", QUICK_DECODE, "leader"),
        ("2", QUICK_DECODE, "one request"),
        ("3", QUICK_DECODE, "overlapping"),
    ]
    assert rank_labels(page) == {
        "leader": "",
        "one request": "no interval",
        "overlapping": "≈ leader",
    }
    assert page.count(">indistinguishable from the leader</span>") == 1
    stored = {
        e.config.label: (e.rank, e.like_leader)
        for e in LeaderboardEntry.objects.select_related("config")
    }
    assert stored == {"leader": (1, None), "one request": (2, None), "overlapping": (3, True)}


# Concurrency rows rank only among concurrency rows measured alike (their levels and lengths,
# not how many rounds), by aggregate tok/s at their lowest level.


def test_a_concurrency_row_ranks_only_among_concurrency_rows(
    concurrency_runs, user, hardware, enqueued, make_result
):
    # A quick row far faster than the concurrency row's pooled decode tok/s.
    measure(user, hardware, make_result, 4, [900.0, 910.0])
    entries = selectors.leaderboard_entries(ranked_only=True)
    page = list(entries)
    ranks = selectors.page_ranks(entries, page, offset=0, ordering="tokens_per_second")
    by_protocol = {}
    for entry in page:
        by_protocol.setdefault(entry.config.protocol, []).append(ranks[entry.pk].rank)
    # Each protocol family's fastest row is rank 1 of its own ranking.
    assert min(by_protocol["concurrency"]) == 1 and min(by_protocol["quick"]) == 1
    speculative = LeaderboardEntry.objects.get(config__key=concurrency_key())
    # The row ranks by aggregate tok/s at its lowest level (its rounds the samples), not by
    # per-request decode pooled over levels, and its speedup is that level's ratio.
    assert speculative.tps_definition == "aggregate" and speculative.interval_basis == "rounds"
    assert speculative.tokens_per_second == pytest.approx(CONCURRENCY_SPECULATIVE[0], rel=1e-3)
    assert speculative.speedup == pytest.approx(CONCURRENCY_SPEEDUPS[0], rel=1e-3)
    assert speculative.speedup_basis == "rounds" and speculative.crossover == "between 2 and 4"
    assert speculative.ranking_key != next(
        e.ranking_key for e in page if e.config.protocol == "quick"
    )
    definitions = selectors.row_definitions(speculative, {})
    assert "at its lowest level" in definitions["tokens_per_second"]
    assert "aggregate tok/s over the paired" in definitions["speedup"]


@pytest.fixture
def record(user, hardware, make_protocol_result, ranked_models):
    """record(levels, speculative tok/s, baseline tok/s, **protocol changes): a concurrency
    config imported with its paired baseline, on ranked models; its key."""
    return functools.partial(import_concurrency_config, user, hardware, make_protocol_result)


def ranks_by_key():
    entries = selectors.leaderboard_entries(ranked_only=True)
    page = list(entries)
    ranks = selectors.page_ranks(entries, page, offset=0, ordering="tokens_per_second")
    return {entry.config.key: ranks[entry.pk].rank for entry in page}


def test_configs_of_other_levels_rank_apart_and_of_the_same_levels_together(record):
    low = record([1, 2], [100.0, 150.0], [60.0, 120.0])
    wide = record([1, 2, 4], [30.0, 40.0, 50.0], [20.0, 30.0, 40.0])
    # The same levels and lengths, measured over more rounds: the same ranking as `wide`.
    again = record([1, 2, 4], [20.0, 25.0, 30.0], [10.0, 12.0, 14.0], rounds=3)

    ranks = ranks_by_key()

    variants = dict(
        Config.objects.filter(key__in=[low, wide, again]).values_list("key", "protocol_variant")
    )
    assert variants[wide] == variants[again] != variants[low]
    # Each is ranked among its own: `low` leads its ranking, `wide` leads the other, and
    # `again` (slower, same levels) comes after `wide`, not after `low`.
    assert ranks == {low: 1, wide: 1, again: 2}
    entries = {e.config.key: e for e in LeaderboardEntry.objects.filter(config__key__in=ranks)}
    assert entries[wide].ranking_key == entries[again].ranking_key != entries[low].ranking_key
    # Ranked by aggregate tok/s at the lowest level (level 1: its rounds' tokens over wall time).
    assert {key: e.tps_definition for key, e in entries.items()} == dict.fromkeys(
        ranks, "aggregate"
    )
    assert entries[low].tokens_per_second == pytest.approx(100.0, rel=0.05)
    assert entries[wide].tokens_per_second == pytest.approx(30.0, rel=0.05)
    assert entries[again].tokens_per_second == pytest.approx(20.0, rel=0.05)
