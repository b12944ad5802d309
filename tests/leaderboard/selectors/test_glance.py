"""The front page's answer at a glance (`selectors.glance.fastest_drafts`): decided for the pairs it
shows, in a number of queries that does not grow with the board; every workload where a draft is
faster than none named, in an order that does not follow what was submitted last."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard import services
from leaderboard.selectors.board import competing_drafts
from leaderboard.selectors.glance import GLANCE_LIMIT, fastest_drafts
from tests.support.measured_configs import measure

GPUS = GLANCE_LIMIT + 3


def measured_on_many_gpus(user, make_result) -> list:
    """One draft-simple config measured with its baseline on each of GPUS hardware kinds, the
    k-th kind's draft k% faster than the one before."""
    kinds = []
    for index in range(GPUS):
        kind = services.register_hardware(gpu_name=f"GPU {index:02d}", memory_bytes=80 * 2**30)
        measure(user, kind, make_result, 4, [100.0 + index, 104.0 + index])
        kinds.append(kind)
    return kinds


def leader(answer):
    """The leading draft of an answer's first workload."""
    return answer.tables[0].drafts[0]


def test_the_glance_shows_the_first_pairs_and_counts_the_rest(user, ranked_models, make_result):
    kinds = measured_on_many_gpus(user, make_result)

    glance = fastest_drafts()
    answers = glance.answers

    assert [a.hardware.pk for a in answers] == [k.pk for k in kinds[:GLANCE_LIMIT]]
    assert glance.pairs_left == GPUS - GLANCE_LIMIT
    assert all(leader(a).entry.config.n_max == 4 for a in answers)
    assert all(leader(a).entry.hardware_id == a.hardware.pk for a in answers)


def test_a_recorded_run_costs_the_glance_the_pairs_shown_not_every_pair(
    user, ranked_models, make_result
):
    measured_on_many_gpus(user, make_result)
    fastest_drafts()

    # A change of values, not of the row set: the pairs are kept, the answers decided again.
    services.raise_board_version()
    with CaptureQueriesContext(connection) as again:
        answers = fastest_drafts().answers
    # One read of the rows of the pairs shown (none of the pairs past the limit), and one of
    # their rankings' leads; no count of the board.
    entry_reads = [q for q in again.captured_queries if "leaderboard_leaderboardentry" in q["sql"]]
    assert len(entry_reads) == 1
    summary_reads = [q for q in again.captured_queries if "leaderboard_rankingsummary" in q["sql"]]
    assert len(summary_reads) == 1 and '"drafts" > 0' in summary_reads[0]["sql"]
    assert len(answers) == GLANCE_LIMIT

    # A new row (the row set changes) counts the pairs again, from the rankings' summaries.
    services.raise_board_version(row_set=True)
    with CaptureQueriesContext(connection) as recounted:
        fastest_drafts()
    assert any("leaderboard_rankingsummary" in q["sql"] for q in recounted.captured_queries)


def _entry_reads(captured) -> list[str]:
    return [
        q["sql"] for q in captured.captured_queries if "leaderboard_leaderboardentry" in q["sql"]
    ]


def test_a_run_recorded_in_one_shown_ranking_reads_that_pair_alone(
    user, ranked_models, make_result
):
    kinds = measured_on_many_gpus(user, make_result)
    before = fastest_drafts()
    changed = leader(before.answers[0]).entry.ranking_key
    others = [leader(answer).entry.ranking_key for answer in before.answers[1:]]

    # A run recorded in a ranking the glance does not show reads none of its rows.
    services.raise_board_version(rankings=["a ranking not on the glance"])
    with CaptureQueriesContext(connection) as elsewhere:
        assert fastest_drafts() == before
    assert _entry_reads(elsewhere) == []

    # A run recorded in one pair's ranking reads that pair's rows and no other pair's.
    services.raise_board_version(rankings=[changed])
    with CaptureQueriesContext(connection) as there:
        fastest_drafts()
    [read] = _entry_reads(there)
    assert changed in read
    assert not any(key in read for key in others)

    # A real run that changes the pair's answer shows on the next read: a faster draft.
    faster = measure(user, kinds[0], make_result, 6, [300.0, 310.0])
    [answer] = [a for a in fastest_drafts().answers if a.hardware.pk == kinds[0].pk]
    assert leader(answer).entry.config_id == faster.config_id


def test_the_front_page_reads_no_column_of_the_glance_rows_it_did_not_fetch(
    client, user, ranked_models, make_result, monkeypatch
):
    # The glance reads up to 500 rows a pair as values (selectors.draft_rows): nothing the page
    # shows of them is fetched row by row; here a lazy fetch raises instead.
    from django.db.models import FETCH_RAISE

    from leaderboard.selectors import glance

    measured_on_many_gpus(user, make_result)
    monkeypatch.setattr(
        glance, "competing_drafts", lambda: competing_drafts().fetch_mode(FETCH_RAISE)
    )
    services.raise_board_version()
    page = client.get("/")
    assert page.status_code == 200
    assert page.content.decode().count('<li class="glance-answer">') == GLANCE_LIMIT


def test_a_draft_row_holds_each_column_of_its_row_and_config(user, ranked_models, make_result):
    """The glance's and the advice's rows are read as values (`draft_rows`): each value lands in
    the field of its name, a kind's rows share its one `Hardware`, and a row survives the cache
    (ranking_kept keeps the tables pickled)."""
    import pickle
    from dataclasses import fields

    from leaderboard.models import LeaderboardEntry
    from leaderboard.selectors.draft_rows import DraftRow, draft_rows

    measured_on_many_gpus(user, make_result)
    assert [field.name for field in fields(DraftRow)][: len(DraftRow.OWN)] == list(DraftRow.OWN)
    rows = draft_rows(competing_drafts().order_by("pk"))
    assert len(rows) == competing_drafts().count() >= 2
    for row in rows:
        stored = LeaderboardEntry.objects.select_related("config__draft", "hardware").get(pk=row.pk)
        for name in DraftRow.OWN[1:]:
            assert getattr(row, name) == getattr(stored, name), name
        for name in ("key", "label", "spec_label", "protocol", "n_max", "draft_id"):
            assert getattr(row.config, name) == getattr(stored.config, name), name
        assert (row.config.draft.name if row.config.draft else None) == (
            stored.config.draft.name if stored.config.draft_id else None
        )
        assert row.hardware == stored.hardware and row.hardware_id == stored.hardware_id
        assert row.get_tps_definition_display() == stored.get_tps_definition_display()
        assert pickle.loads(pickle.dumps(row)) == row
    by_kind = {}
    for row in rows:
        assert by_kind.setdefault(row.hardware.pk, row.hardware) is row.hardware
