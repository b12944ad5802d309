"""The leaderboard at scale: ranks computed for a page only, and pages cached per board version."""

from __future__ import annotations

import random
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard import board_version, selectors, services
from leaderboard.models import Config, Hardware, LeaderboardEntry
from leaderboard.services.board import mark_test_weights
from tests.support.measured_configs import draft_simple, measure

ORDERINGS = list(selectors.LEADERBOARD_ORDERINGS)


@pytest.fixture
def models(models):
    """The tiny fixture models, cleared of their test-weights mark as an admin could: these tests
    are about the ranking, and test-weight rows never enter it (test_definitions_on_pages)."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


@pytest.fixture
def many_entries(db) -> list[LeaderboardEntry]:
    """Sixty rows of two tok/s definitions with repeated speeds, missing speedups and taus,
    intervals that reach the leader's, and batches too small to have an interval at all."""
    rng = random.Random(3)
    hardware = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    entries = []
    for index in range(60):
        config = Config.objects.create(
            key=f"{index:016x}",
            canonical={"index": index},
            label=f"config {index}",
            target_name=f"target-{index % 3}",
            spec_label=("draft-simple", "ngram", "none")[index % 3],
            protocol="quick",
        )
        speed = float(rng.choice([50, 60, 70, 80, 90, 99, 100]) + rng.choice([0, 0.5]))
        half_width = rng.choice([0.2, 1.0, 3.0])
        # One batch in five has a single request: its zero-width interval is no interval.
        n = rng.choice([1, 5, 5, 5, 5])
        entries.append(
            LeaderboardEntry.objects.create(
                config=config,
                hardware=hardware,
                engine_release="b11434",
                tps_definition=rng.choice(["decode", "decode", "end-to-end"]),
                tokens_per_second=speed,
                n=n,
                ci95_low=speed - half_width if n > 1 else speed,
                ci95_high=speed + half_width if n > 1 else speed,
                speedup=rng.choice([None, 1.2, 1.5, 2.0, 2.5]),
                acceptance_rate=rng.choice([None, rng.random()]),
                tau=rng.choice([None, 2.0, 3.0]),
            )
        )
    return entries


# Speedup, like tok/s, is a figure of one tok/s definition; acceptance and tau are not.
WITHIN_DEFINITION = {"tokens_per_second", "speedup"}


def full_ranking(rows: list[LeaderboardEntry], ordering: str) -> dict[int, tuple[int | None, bool]]:
    """The rules spelled out over every row: competition rank by the sorted field, among the
    rows of the same tok/s definition for tok/s and speedup; no value, no rank; sorted by tok/s,
    a row whose interval overlaps its definition's leader's is tied, and n < 2 ties with nothing."""
    ranks: dict[int, tuple[int | None, bool]] = {}
    for row in rows:
        value = getattr(row, ordering)
        if value is None:
            ranks[row.pk] = (None, False)
            continue
        peers = [
            other
            for other in rows
            if ordering not in WITHIN_DEFINITION or other.tps_definition == row.tps_definition
        ]
        higher = sum(
            getattr(other, ordering) is not None and getattr(other, ordering) > value
            for other in peers
        )
        tied = False
        if ordering == "tokens_per_second":
            leader = min(peers, key=lambda other: (-other.tokens_per_second, other.pk))
            tied = (
                row.pk != leader.pk
                and row.n >= 2
                and leader.n >= 2
                and row.ci95_low <= leader.ci95_high
                and leader.ci95_low <= row.ci95_high
            )
        ranks[row.pk] = (1, True) if tied else (higher + 1, False)
    return ranks


@pytest.mark.parametrize("ordering", ORDERINGS)
@pytest.mark.parametrize("target", ["", "target-1"])
def test_ranks_computed_for_one_page_match_the_ranking_of_every_row(many_entries, ordering, target):
    entries = selectors.leaderboard_entries(target=target, ordering=ordering)
    everything = list(entries)
    expected = full_ranking(everything, ordering)
    assert {row.tps_definition for row in everything} == {"decode", "end-to-end"}
    if ordering == "tokens_per_second":
        assert any(tied for _, tied in expected.values()), "the fixture should have ties"
    else:
        assert any(rank is None for rank, _ in expected.values()), "and rows without the value"
    for offset in range(0, len(everything), 7):
        page = everything[offset : offset + 7]
        ranks = selectors.page_ranks(entries, page, offset=offset, ordering=ordering)
        assert ranks == {row.pk: expected[row.pk] for row in page}, (ordering, offset)


def test_each_tok_s_definition_has_its_own_rank_one_and_one_batch_rows_tie_with_nothing(
    many_entries,
):
    entries = selectors.leaderboard_entries(ordering="tokens_per_second")
    everything = list(entries)
    ranks = selectors.page_ranks(entries, everything, offset=0, ordering="tokens_per_second")

    leaders = {
        definition: min(
            (row for row in everything if row.tps_definition == definition),
            key=lambda row: (-row.tokens_per_second, row.pk),
        )
        for definition in ("decode", "end-to-end")
    }
    assert all(ranks[leader.pk] == (1, False) for leader in leaders.values())
    # A one-request row at the leader's own speed sits inside its interval, and still is no tie.
    inside = [
        row
        for row in everything
        if row.n == 1
        and row.pk != leaders[row.tps_definition].pk
        and leaders[row.tps_definition].ci95_low
        <= row.tokens_per_second
        <= leaders[row.tps_definition].ci95_high
    ]
    assert inside and all(not ranks[row.pk][1] for row in inside)
    assert all(ranks[row.pk][0] > 1 for row in inside if row.tokens_per_second < 100.5)


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
    assert client.get("/api/v1/leaderboard").json()["count"] == 2

    # A faster batch of a row already on the board: new ranks, same rows.
    again = services.submit_config(owner=user, data=draft_simple(4), hardware_slug=hardware.slug)
    services.record_result(job_id=again.pk, result=make_result(again.config.key, [200.0, 204.0]))
    assert counters()[0] > value and counters()[1] == row_set
    page = client.get("/api/v1/leaderboard").json()
    assert page["count"] == 2 and page["results"][0]["tokens_per_second"] == 202.0

    # A new row, then a retired build: the count follows both.
    measure(user, hardware, make_result, 7, [300.0, 304.0])
    assert counters()[1] > row_set
    assert client.get("/api/v1/leaderboard").json()["count"] == 3
    # Three speculative jobs, each measuring its paired baseline beside itself: no baseline job.
    assert Job.objects.filter(status="succeeded").count() == 3
    services.retire_engine_build(release="b11434", note="bad build")
    assert client.get("/api/v1/leaderboard").json()["count"] == 0
    everything = client.get("/api/v1/leaderboard", {"include_retired": "true"}).json()
    assert everything["count"] == 3 and all(row["retired"] for row in everything["results"])
    assert client.get("/api/v1/leaderboard", {"ordering": "speedup"}).status_code == 200
    html = client.get("/").content.decode()
    assert "No ranked results match" in html
