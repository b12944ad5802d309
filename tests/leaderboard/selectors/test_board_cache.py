"""The leaderboard at scale: ranks stored per ranking and read for a page only, and pages cached
per board version."""

from __future__ import annotations

import random
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from scipy import stats

from leaderboard import board_version, selectors, services
from leaderboard.models import Hardware, LeaderboardEntry
from leaderboard.selectors.ranks import PageRank
from leaderboard.services.board import mark_test_weights
from tests.support.board_rows import board_row
from tests.support.measured_configs import draft_simple, measure

ORDERINGS = list(selectors.LEADERBOARD_ORDERINGS)


@pytest.fixture
def models(models):
    """The tiny fixture models, cleared of their test-weights mark as an admin could: these tests
    are about the ranking, and test-weight rows never enter it (views/test_board_page.py)."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


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


def ranked_labels(page: str) -> list[str]:
    ranking = re.search(r'<table class="board" id="ranking">(.*?)</table>', page, re.S)
    return re.findall(r'<a href="/configs/[0-9a-f]+/">([^<]+)</a>', ranking.group(1))


def test_a_cached_leaderboard_shows_a_new_result_as_soon_as_it_is_recorded(
    client, user, models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    before_html = ranked_labels(client.get("/").content.decode())
    before_api = [row["label"] for row in client.get("/api/v1/leaderboard").json()["results"]]
    assert any("n_max 4" in label for label in before_html)

    measure(user, hardware, make_result, 7, [300.0, 304.0])

    after_html = ranked_labels(client.get("/").content.decode())
    after_api = [row["label"] for row in client.get("/api/v1/leaderboard").json()["results"]]
    assert "n_max 7" in after_html[0] and "n_max 7" in after_api[0]
    assert len(after_html) == len(before_html) + 1 and len(after_api) == len(before_api) + 1


def test_a_cached_page_is_served_without_reading_the_rows_again(
    client, user, models, hardware, enqueued, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    for url in ("/", "/api/v1/leaderboard"):
        with CaptureQueriesContext(connection) as first:
            first_body = client.get(url).content
        with CaptureQueriesContext(connection) as second:
            second_body = client.get(url).content
        assert second_body == first_body
        # Only the board version is read (once per cached piece), never the leaderboard rows.
        assert all("leaderboard_boardversion" in q["sql"] for q in second.captured_queries), url
        assert len(second.captured_queries) < len(first.captured_queries), url


def test_a_bad_leaderboard_query_is_refused_before_any_cached_page(client, db):
    response = client.get("/api/v1/leaderboard", {"ordering": "'; DROP TABLE x"})
    assert response.status_code == 400
    assert client.get("/api/v1/leaderboard").status_code == 200


def test_a_run_recorded_by_another_process_shows_once_the_version_is_read_again(
    client, user, models, hardware, enqueued, make_result, settings, monkeypatch
):
    from leaderboard.models import BoardVersion

    settings.SPECBOARD_BOARD_VERSION_SECONDS = 1.0
    clock = [1000.0]
    monkeypatch.setattr(board_version.time, "monotonic", lambda: clock[0])
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    first = ranked_labels(client.get("/").content.decode())

    # Another process (a db worker) records a run: rows and counter change, this process's
    # remembered version does not.
    saved = board_version._seen
    measure(user, hardware, make_result, 7, [300.0, 304.0])
    board_version._seen = saved
    assert BoardVersion.objects.get(pk=1).value > saved[1][0]

    assert ranked_labels(client.get("/").content.decode()) == first
    clock[0] += 1.5
    assert "n_max 7" in ranked_labels(client.get("/").content.decode())[0]


def test_only_rows_that_come_go_or_leave_the_ranking_change_the_boards_row_set(
    client, user, models, hardware, enqueued, make_result
):
    from leaderboard.models import BoardVersion, Job

    def counters() -> tuple[int, int]:
        row = BoardVersion.objects.get(pk=1)
        return row.value, row.row_set

    measure(user, hardware, make_result, 4, [100.0, 104.0])
    value, row_set = counters()
    # The speculative row; its baseline is the denominator, listed apart, not in the ranking.
    assert client.get("/api/v1/leaderboard").json()["count"] == 1

    # A faster batch of a row already on the board: new ranks, same rows.
    again = services.submit_config(owner=user, data=draft_simple(4), hardware_slug=hardware.slug)
    services.record_result(job_id=again.pk, result=make_result(again.config.key, [200.0, 204.0]))
    assert counters()[0] > value and counters()[1] == row_set
    page = client.get("/api/v1/leaderboard").json()
    assert page["count"] == 1 and page["results"][0]["tokens_per_second"] == 202.0

    # A new row, then a retired build: the count follows both.
    measure(user, hardware, make_result, 7, [300.0, 304.0])
    assert counters()[1] > row_set
    page = client.get("/api/v1/leaderboard").json()
    assert page["count"] == 2 and [row["rank"] for row in page["results"]] == [1, 2]
    # Three speculative jobs, each measuring its paired baseline beside itself: no baseline job.
    assert Job.objects.filter(status="succeeded").count() == 3
    services.retire_engine_build(release="b11434", note="bad build")
    assert client.get("/api/v1/leaderboard").json()["count"] == 0
    # Listed with the retired rows: both configs and their baseline, none of them ranked.
    everything = client.get("/api/v1/leaderboard", {"include_retired": "true"}).json()
    assert everything["count"] == 3 and all(row["retired"] for row in everything["results"])
    assert [row["rank"] for row in everything["results"]] == [None, None, None]
    assert not LeaderboardEntry.objects.filter(rank__isnull=False).exists()
    assert client.get("/api/v1/leaderboard", {"ordering": "speedup"}).status_code == 200
    html = client.get("/").content.decode()
    assert "No ranked results match" in html


def test_a_page_that_several_requests_miss_at_once_is_computed_once(db):
    import threading
    import time

    selectors.board_version()  # read once here: the threads use what this process read
    computed = []

    def slow_page() -> str:
        computed.append(threading.get_ident())
        time.sleep(0.5)
        return "the page"

    pages = []
    requests = [
        threading.Thread(target=lambda: pages.append(selectors.board_cached("slow", {}, slow_page)))
        for _ in range(4)
    ]
    for request in requests:
        request.start()
    for request in requests:
        request.join()

    assert pages == ["the page"] * 4
    assert len(computed) == 1
