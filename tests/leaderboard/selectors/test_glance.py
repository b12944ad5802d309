"""The front page's answer at a glance (`selectors.board.glance.fastest_drafts`): decided for the
pairs it shows, naming the rankings it shows (for the page cache); every workload where a draft is
faster than none named, in an order that does not follow what was submitted last."""

from __future__ import annotations

from leaderboard import selectors, services
from leaderboard.models import LeaderboardEntry
from leaderboard.selectors.board.glance import GLANCE_LIMIT, fastest_drafts
from leaderboard.selectors.board.rows import competing_drafts
from leaderboard.web.board_version import answer_key
from tests.support.measured_configs import draft_simple, measure, measure_config
from tests.support.pages import class_texts, element_text, text

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


def test_the_glance_names_the_rankings_of_the_pairs_it_shows_and_no_other(
    user, ranked_models, make_result
):
    kinds = measured_on_many_gpus(user, make_result)
    glance = fastest_drafts()

    shown = {leader(answer).entry.ranking_key for answer in glance.answers}
    assert shown <= glance.rankings
    assert {answer_key(kind.pk, "tiny-qwen3") for kind in kinds[:GLANCE_LIMIT]} <= glance.rankings
    past = LeaderboardEntry.objects.filter(hardware__in=kinds[GLANCE_LIMIT:])
    assert past.exists()
    assert not {row.ranking_key for row in past} & glance.rankings


def test_a_run_recorded_in_one_shown_ranking_shows_on_the_next_read(
    user, ranked_models, make_result
):
    kinds = measured_on_many_gpus(user, make_result)
    before = fastest_drafts()
    assert leader(before.answers[0]).entry.ranking_key in before.rankings

    # A real run that changes the pair's answer shows on the next read: a faster draft.
    faster = measure(user, kinds[0], make_result, 6, [300.0, 310.0])
    [answer] = [a for a in fastest_drafts().answers if a.hardware.pk == kinds[0].pk]
    assert leader(answer).entry.config_id == faster.config_id


def test_the_front_page_reads_no_column_of_the_glance_rows_it_did_not_fetch(
    client, user, ranked_models, make_result, monkeypatch
):
    # The glance reads up to 500 rows a pair as values (selectors.answers.draft_rows): nothing the
    # page shows of them is fetched row by row; here a lazy fetch raises instead.
    from django.db.models import FETCH_RAISE

    from leaderboard.selectors.board import glance

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
    the field of its name, a kind's rows share its one `Hardware`, and a row survives pickling
    (a page cache keeps what is rendered from it)."""
    import pickle
    from dataclasses import fields

    from leaderboard.models import LeaderboardEntry
    from leaderboard.selectors.answers.draft_rows import DraftRow, draft_rows

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


# Every workload with a faster draft, named and in a stable order (issue 44, point 5) ---------

BEES = "Bees hum over the clover in the warm afternoon."
COLD = "Cold rivers run down from the hills to the sea."


def measured_on(user, hardware, make_result, n_max: int, decode: list[float], prompt=None):
    """A draft-simple config on the quick protocol (its own prompt if given: another workload,
    so another ranking), with its baseline of 50 and 52 tok/s measured beside it: its row."""
    data = draft_simple(n_max)
    if prompt:
        data["protocol"] = data["protocol"] | {"prompt": prompt}
    job = measure_config(user, hardware, make_result, data, decode)
    return LeaderboardEntry.objects.get(config=job.config, hardware=hardware)


def first_answer_text(client, hardware) -> str:
    """The words of the front page's first answer for this GPU kind (the tiny target)."""
    page = text(client.get("/"))
    [answer] = [a for a in class_texts(page, "glance-answer") if a.startswith(hardware.label)]
    return answer


def test_the_first_answer_names_every_workload_where_a_draft_is_faster(
    client, user, ranked_models, hardware, make_result
):
    # The board: the workload with the most configs measured only slower drafts, another
    # one's drafts measured 1.13x and 1.20x, a third's a slower one.
    for n_max, decode in ((2, [30.0, 31.0]), (3, [32.0, 33.0]), (5, [34.0, 35.0])):
        measured_on(user, hardware, make_result, n_max, decode)
    measured_on(user, hardware, make_result, 4, [57.6, 58.0], BEES)
    fastest = measured_on(user, hardware, make_result, 6, [61.0, 61.4], BEES)
    measured_on(user, hardware, make_result, 4, [40.0, 41.0], COLD)

    [answer] = fastest_drafts().answers

    assert not answer.none_faster
    assert [table.ranking_key for table in answer.tables] == [fastest.ranking_key]
    assert leader(answer).entry.pk == fastest.pk
    assert (answer.workloads, answer.others, answer.more) == (3, 2, 0)
    words = first_answer_text(client, hardware)
    assert "tiny-qwen3 no draft" not in words
    assert f"n_max 6 {fastest.speedup:.2f}×" in words and "1.20×" in words
    assert f"on {fastest.ranking_label}" in words
    assert "2 other workloads measured, where no draft is faster than none" in words
    # The chart beside it shows that workload and names it.
    chart = selectors.speedup_chart()
    assert chart["ranking_label"] == fastest.ranking_label
    assert [point["key"] for point in chart["points"]] == [
        fastest.config.key,
        LeaderboardEntry.objects.get(config__n_max=4, ranking_key=fastest.ranking_key).config.key,
    ]
    named = element_text(text(client.get("/")), "speedup-chart-workload")
    assert named.startswith(f"On {fastest.ranking_label} (4 rows of 2 other workloads left out")


def test_the_answer_keeps_its_order_when_another_run_is_submitted_last(
    client, user, ranked_models, hardware, make_result
):
    bees = measured_on(user, hardware, make_result, 4, [61.0, 61.4], BEES)
    cold = measured_on(user, hardware, make_result, 4, [76.0, 77.0], COLD)
    [before] = fastest_drafts().answers
    assert [table.ranking_key for table in before.tables] == [bees.ranking_key, cold.ranking_key]
    words = first_answer_text(client, hardware)
    assert words.index(bees.ranking_label) < words.index(cold.ranking_label)
    assert selectors.speedup_chart()["ranking_label"] == bees.ranking_label

    # Submitted last: two more configs on the second workload, one of them the fastest of all,
    # so it now has the most configs and the fastest draft. The order is the labels' still.
    measured_on(user, hardware, make_result, 6, [90.0, 91.0], COLD)
    fastest = measured_on(user, hardware, make_result, 8, [150.0, 152.0], COLD)

    [after] = fastest_drafts().answers
    assert [table.ranking_key for table in after.tables] == [bees.ranking_key, cold.ranking_key]
    assert after.tables[1].drafts[0].entry.pk == fastest.pk
    words = first_answer_text(client, hardware)
    assert words.index(bees.ranking_label) < words.index(cold.ranking_label)
    assert selectors.speedup_chart()["ranking_label"] == bees.ranking_label


def test_where_no_workload_has_a_faster_draft_the_answer_is_no_draft_and_the_least_slow(
    client, user, ranked_models, hardware, make_result
):
    for n_max, decode in ((2, [30.0, 31.0]), (3, [32.0, 33.0])):
        measured_on(user, hardware, make_result, n_max, decode)
    least_slow = measured_on(user, hardware, make_result, 4, [45.0, 46.0], COLD)

    [answer] = fastest_drafts().answers

    assert answer.none_faster and [t.ranking_key for t in answer.tables] == [least_slow.ranking_key]
    words = first_answer_text(client, hardware)
    assert "no draft (no draft measured faster than none on any of the 2 workloads" in words
    assert f"{least_slow.speedup:.2f}× on {least_slow.ranking_label})" in words
    assert selectors.speedup_chart()["ranking_label"] == least_slow.ranking_label


def test_workloads_past_the_answers_limit_are_counted_and_linked(
    client, user, ranked_models, hardware, make_result, monkeypatch
):
    from leaderboard.selectors.board import glance

    monkeypatch.setattr(glance, "GLANCE_WORKLOADS", 1)
    bees = measured_on(user, hardware, make_result, 4, [61.0, 61.4], BEES)
    measured_on(user, hardware, make_result, 4, [76.0, 77.0], COLD)

    [answer] = fastest_drafts().answers

    assert [t.ranking_key for t in answer.tables] == [bees.ranking_key] and answer.more == 1
    words = first_answer_text(client, hardware)
    assert "1 more workload with a faster draft: every workload" in words
    assert 'href="/models/tiny-qwen3/"' in client.get("/").content.decode()


def test_a_workload_the_answer_does_not_name_is_not_among_its_rankings_until_a_draft_is_faster(
    user, ranked_models, hardware, make_result
):
    bees = measured_on(user, hardware, make_result, 4, [61.0, 61.4], BEES)
    cold = measured_on(user, hardware, make_result, 4, [40.0, 41.0], COLD)
    glance = fastest_drafts()
    [answer] = glance.answers
    assert [table.ranking_key for table in answer.tables] == [bees.ranking_key]
    # Its answer key stands for which workloads it names: raised where that may change.
    assert answer_key(hardware.pk, "tiny-qwen3") in glance.rankings
    assert bees.ranking_key in glance.rankings and cold.ranking_key not in glance.rankings

    # Still slower than none there: the answer names the same workload.
    measured_on(user, hardware, make_result, 6, [42.0, 43.0], COLD)
    [answer] = fastest_drafts().answers
    assert [table.ranking_key for table in answer.tables] == [bees.ranking_key]

    # A draft there faster than none: named at once, in its label's place.
    faster = measured_on(user, hardware, make_result, 8, [150.0, 152.0], COLD)
    glance = fastest_drafts()
    [answer] = glance.answers
    assert [table.ranking_key for table in answer.tables] == [bees.ranking_key, cold.ranking_key]
    assert answer.tables[1].drafts[0].entry.pk == faster.pk
    assert cold.ranking_key in glance.rankings
