"""The page cache (selectors.cache): pages cached per board version, a new result shown as soon as
it is recorded, a cached page served without reading the rows, a run recorded by another
process shown once the version is read again, the row set changing only with rows that come,
go or leave the ranking, and a page several requests miss at once computed once. The tests
measure on the tiny models cleared of their test-weights mark (ranked_models): test-weight rows
never enter the ranking (views/test_board_page.py)."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard import board_version, selectors, services
from leaderboard.models import Config, Hardware, LeaderboardEntry
from tests.support.board_rows import board_row
from tests.support.measured_configs import draft_simple, measure


def ranked_labels(page: str) -> list[str]:
    ranking = re.search(r'<table class="board" id="ranking">(.*?)</table>', page, re.S)
    return re.findall(r'<a href="/configs/[0-9a-f]+/">([^<]+)</a>', ranking.group(1))


def test_a_cached_leaderboard_shows_a_new_result_as_soon_as_it_is_recorded(
    client, user, ranked_models, hardware, enqueued, make_result
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
    client, user, ranked_models, hardware, enqueued, make_result
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
    client, user, ranked_models, hardware, enqueued, make_result, settings, monkeypatch
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
    client, user, ranked_models, hardware, enqueued, make_result
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
    again = services.submit_config(
        owner=user, data=draft_simple(4, runs=2), hardware_slug=hardware.slug
    )
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


def test_a_board_row_kept_by_its_content_is_rendered_again_when_what_it_shows_changes(client, db):
    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    row = board_row(kind, "kept row", 123.45)
    assert "123.45" in client.get("/").content.decode()

    # Each change the services would make: a value, the hardware's name, the config's label.
    LeaderboardEntry.objects.filter(pk=row.pk).update(tokens_per_second=130.5)
    services.raise_board_version()
    assert "130.50" in client.get("/").content.decode()
    Hardware.objects.filter(pk=kind.pk).update(gpu_name="GPU A renamed")
    services.raise_board_version()
    assert "GPU A renamed" in client.get("/").content.decode()
    Config.objects.filter(pk=row.config_id).update(label="relabelled row")
    services.raise_board_version()
    page = client.get("/").content.decode()
    assert "relabelled row" in page and "kept row" not in page

    # The API's rows likewise.
    LeaderboardEntry.objects.filter(pk=row.pk).update(tokens_per_second=140.25)
    services.raise_board_version()
    [listed] = client.get("/api/v1/leaderboard").json()["results"]
    assert listed["tokens_per_second"] == 140.25 and listed["label"] == "relabelled row"


def test_a_ranking_scoped_read_is_kept_across_changes_to_rankings_it_did_not_read(db):
    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    shown = board_row(kind, "shown row", 100.0)
    elsewhere = board_row(Hardware.objects.create(slug="gpu-b", gpu_name="GPU B"), "other", 90.0)
    assert shown.ranking_key != elsewhere.ranking_key
    computed = []

    def read() -> list[float]:
        computed.append(1)
        return [e.tokens_per_second for e in LeaderboardEntry.objects.filter(pk=shown.pk)]

    assert selectors.ranking_cached("scoped", {}, read) == [100.0]
    # A run recorded in another ranking: the read is kept (one query compares the versions).
    LeaderboardEntry.objects.filter(pk=elsewhere.pk).update(tokens_per_second=95.0)
    services.raise_board_version(rankings=[elsewhere.ranking_key])
    with CaptureQueriesContext(connection) as validated:
        assert selectors.ranking_cached("scoped", {}, read) == [100.0]
    assert len(computed) == 1 and len(validated.captured_queries) <= 2
    # One in its own ranking, or a change that names none: computed again.
    LeaderboardEntry.objects.filter(pk=shown.pk).update(tokens_per_second=110.0)
    services.raise_board_version(rankings=[shown.ranking_key])
    assert selectors.ranking_cached("scoped", {}, read) == [110.0] and len(computed) == 2
    LeaderboardEntry.objects.filter(pk=shown.pk).update(tokens_per_second=120.0)
    services.raise_board_version()
    assert selectors.ranking_cached("scoped", {}, read) == [120.0] and len(computed) == 3


def test_a_recorded_run_shows_on_the_board_and_one_elsewhere_leaves_it_as_it_was(
    client, user, ranked_models, hardware, make_result
):
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    other_gpu = services.register_hardware(gpu_name="RTX 4090", memory_bytes=24 * 2**30)
    first = client.get("/").content.decode()
    assert "102.00" in first

    # Another GPU's ranking: a new row (the row set) makes the board computed again, with it.
    measure(user, other_gpu, make_result, 4, [60.0, 62.0])
    assert "61.00" in client.get("/").content.decode()
    # A re-measurement on the first GPU is shown at once.
    measure(user, hardware, make_result, 4, [150.0, 154.0])
    assert "152.00" in client.get("/").content.decode()


def test_a_read_kept_per_version_cannot_hide_inside_a_ranking_scoped_one(db):
    def nested() -> int:
        return selectors.board_cached("per-version", {}, lambda: 1)

    with pytest.raises(RuntimeError, match="ranking-scoped"):
        selectors.ranking_cached("outer", {}, nested)
    assert selectors.ranking_cached("outer-row-set", {}, lambda: 2) == 2


def test_a_kept_ranking_scoped_read_inside_another_passes_on_what_it_read(db):
    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    shown = board_row(kind, "shown row", 100.0)

    def inner() -> float:
        return LeaderboardEntry.objects.get(pk=shown.pk).tokens_per_second

    # Kept first on its own, then met (kept) inside the outer read, which reads no row itself.
    assert selectors.ranking_cached("inner", {}, inner) == 100.0
    assert (
        selectors.ranking_cached("outer", {}, lambda: selectors.ranking_cached("inner", {}, inner))
        == 100.0
    )
    LeaderboardEntry.objects.filter(pk=shown.pk).update(tokens_per_second=110.0)
    services.raise_board_version(rankings=[shown.ranking_key])
    assert (
        selectors.ranking_cached("outer", {}, lambda: selectors.ranking_cached("inner", {}, inner))
        == 110.0
    )


def test_a_ranking_scoped_read_computed_inside_another_passes_on_what_it_read(db):
    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    shown = board_row(kind, "shown row", 100.0)

    def inner() -> float:
        return LeaderboardEntry.objects.get(pk=shown.pk).tokens_per_second

    def outer() -> float:
        return selectors.ranking_cached("inner", {}, inner)

    # Both computed together: the outer read reads no row itself, the inner one does.
    assert selectors.ranking_cached("outer", {}, outer) == 100.0
    LeaderboardEntry.objects.filter(pk=shown.pk).update(tokens_per_second=110.0)
    services.raise_board_version(rankings=[shown.ranking_key])
    assert selectors.ranking_cached("outer", {}, outer) == 110.0


def test_a_run_recorded_in_the_front_pages_ranking_renders_its_ranked_rows_alone(
    client, user, ranked_models, hardware, make_result, monkeypatch
):
    job = measure(user, hardware, make_result, 4, [100.0, 104.0])
    kept_off = board_row(
        services.register_hardware(gpu_name="Other GPU"), "self-reported row", 80.0
    )
    LeaderboardEntry.objects.filter(pk=kept_off.pk).update(self_reported=True)
    services.raise_board_version(row_set=True)
    assert "self-reported row" in client.get("/").content.decode()
    read = {"ranked": 0, "kept off": 0}

    def counted(name, select):
        def call(**kwargs):
            read[name] += 1
            return select(**kwargs)

        return call

    monkeypatch.setattr(selectors, "board_ranked", counted("ranked", selectors.board_ranked))
    monkeypatch.setattr(selectors, "board_kept_off", counted("kept off", selectors.board_kept_off))

    # A run recorded in the ranked row's ranking reads its ranking again, not the kept-off rows.
    ranked = LeaderboardEntry.objects.get(config=job.config)
    services.raise_board_version(rankings=[ranked.ranking_key])
    page = client.get("/").content.decode()
    assert "self-reported row" in page and "102.00" in page
    assert read == {"ranked": 1, "kept off": 0}

    # One recorded in the kept-off row's ranking reads those rows again, and shows there.
    LeaderboardEntry.objects.filter(pk=kept_off.pk).update(tokens_per_second=85.5)
    services.raise_board_version(rankings=[kept_off.ranking_key])
    assert "85.50" in client.get("/").content.decode()
    assert read == {"ranked": 1, "kept off": 1}


def test_the_front_page_after_a_recorded_run_asks_each_rankings_version_once(
    client, user, ranked_models, hardware, make_result
):
    """Its ranking-scoped parts (the ranked rows, the kept-off rows, the glance, the filters)
    each check the rankings they read: one query for the versions, not one per part (seven
    queries were six of a miss's twelve at 1M runs)."""
    job = measure(user, hardware, make_result, 4, [100.0, 104.0])
    other = board_row(services.register_hardware(gpu_name="Other GPU"), "other row", 80.0)
    LeaderboardEntry.objects.filter(pk=other.pk).update(self_reported=True)
    services.raise_board_version(row_set=True)
    client.get("/")

    ranked = LeaderboardEntry.objects.get(config=job.config)
    LeaderboardEntry.objects.filter(pk=ranked.pk).update(tokens_per_second=102.5)
    services.raise_board_version(rankings=[ranked.ranking_key])
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/").content.decode()
    assert "102.50" in page and "other row" in page
    version_reads = [q for q in queries if "leaderboard_rankingversion" in q["sql"]]
    assert len(version_reads) == 1

    # The next change shows at once: it moves the counter the kept versions were read under.
    LeaderboardEntry.objects.filter(pk=other.pk).update(tokens_per_second=81.25)
    services.raise_board_version(rankings=[other.ranking_key])
    assert "81.25" in client.get("/").content.decode()


def _recorded_in_its_ranking(row: LeaderboardEntry, figure: float) -> None:
    LeaderboardEntry.objects.filter(pk=row.pk).update(tokens_per_second=figure)
    services.raise_board_version(rankings=[row.ranking_key])


def _computing_mark(name: str) -> str:
    row_set = selectors.board_version()[1]
    return f"board:row-set-{row_set}:ranked:{name}:{selectors.cache._params_digest({})}:computing"


def test_a_ranking_scoped_read_out_of_date_is_computed_once_while_others_serve_it_as_it_was(db):
    from django.core.cache import cache

    shown = board_row(Hardware.objects.create(slug="gpu-a", gpu_name="GPU A"), "shown", 100.0)
    marked = []

    def read() -> float:
        # Whoever computes it holds the mark that tells the others so, in every process.
        marked.append(cache.get(_computing_mark("scoped")))
        return LeaderboardEntry.objects.get(pk=shown.pk).tokens_per_second

    assert selectors.ranking_cached("scoped", {}, read) == 100.0
    _recorded_in_its_ranking(shown, 110.0)
    # Another request (any process) is computing it: this one gets it as it was kept.
    cache.add(_computing_mark("scoped"), True, 5)
    assert selectors.ranking_cached("scoped", {}, read) == 100.0
    assert marked == [True]
    # Once that computation ends (or its mark lapses), the read is computed again, marked.
    cache.delete(_computing_mark("scoped"))
    assert selectors.ranking_cached("scoped", {}, read) == 110.0
    assert marked == [True, True] and cache.get(_computing_mark("scoped")) is None
    assert selectors.ranking_cached("scoped", {}, read) == 110.0 and len(marked) == 2


def test_a_read_built_from_one_served_out_of_date_is_computed_again_by_the_next_request(db):
    from django.core.cache import cache

    shown = board_row(Hardware.objects.create(slug="gpu-a", gpu_name="GPU A"), "shown", 100.0)

    def inner() -> float:
        return LeaderboardEntry.objects.get(pk=shown.pk).tokens_per_second

    def outer() -> float:
        return selectors.ranking_cached("inner", {}, inner) + 0.5

    assert selectors.ranking_cached("outer", {}, outer) == 100.5
    _recorded_in_its_ranking(shown, 110.0)
    # Another request is computing the inner read: the outer one is built from it as it was.
    cache.add(_computing_mark("inner"), True, 5)
    assert selectors.ranking_cached("outer", {}, outer) == 100.5
    cache.delete(_computing_mark("inner"))
    # That outer read was not kept as current: the next request computes both again.
    assert selectors.ranking_cached("outer", {}, outer) == 110.5


def test_a_process_whose_copy_is_out_of_date_takes_the_one_another_process_computed(
    db, monkeypatch
):
    from leaderboard.selectors import cache as page_cache

    shown = board_row(Hardware.objects.create(slug="gpu-a", gpu_name="GPU A"), "shown", 100.0)
    computed = []

    def read() -> float:
        computed.append(1)
        return LeaderboardEntry.objects.get(pk=shown.pk).tokens_per_second

    assert selectors.ranking_cached("scoped", {}, read) == 100.0
    key = next(key for _, key in page_cache._KEPT if ":ranked:scoped:" in key)
    old_copy = page_cache._kept(key)
    _recorded_in_its_ranking(shown, 110.0)
    assert selectors.ranking_cached("scoped", {}, read) == 110.0 and len(computed) == 2
    # This process still holds the old copy in memory; the shared cache holds the new one.
    monkeypatch.setattr(
        page_cache, "_kept", lambda k: old_copy if k == key else page_cache._MISSING
    )
    assert selectors.ranking_cached("scoped", {}, read) == 110.0 and len(computed) == 2


def test_a_row_whose_rank_a_recorded_run_moves_shows_it_without_being_serialized_again(
    client, db, monkeypatch
):
    from leaderboard.api import serializers as api_serializers
    from leaderboard.services.board import rerank

    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    first = board_row(kind, "first row", 120.0)
    second = board_row(kind, "second row", 100.0)
    assert first.ranking_key == second.ranking_key
    listed = client.get("/api/v1/leaderboard").json()["results"]
    assert [(row["label"], row["rank"]) for row in listed] == [("first row", 1), ("second row", 2)]
    serialized = []
    original = api_serializers.LeaderboardEntrySerializer.to_representation

    def counted(self, entry):
        serialized.append(entry.pk)
        return original(self, entry)

    monkeypatch.setattr(api_serializers.LeaderboardEntrySerializer, "to_representation", counted)
    evidence_read = []
    row_evidence = selectors.row_evidence

    def evidence_counted(*, entries):
        evidence_read.extend(entry.pk for entry in entries)
        return row_evidence(entries=entries)

    monkeypatch.setattr(api_serializers.board.selectors, "row_evidence", evidence_counted)

    # The second row is measured faster: it passes the first, whose rank alone changes.
    LeaderboardEntry.objects.filter(pk=second.pk).update(tokens_per_second=130.0)
    rerank(ranking_key=second.ranking_key)
    services.raise_board_version(rankings=[second.ranking_key])
    listed = client.get("/api/v1/leaderboard").json()["results"]
    assert [(row["label"], row["rank"]) for row in listed] == [("second row", 1), ("first row", 2)]
    assert serialized == [second.pk]
    # The evidence behind the numbers is read for the row serialized again, not for the page.
    assert evidence_read == [second.pk]


def test_rows_kept_across_recorded_runs_equal_the_rows_computed_afresh(
    client, user, hardware, models, make_result
):
    # Measured configs (draft counts, a paired baseline batch, energy): after more runs are
    # recorded, the page built from kept rows is the page computed with nothing kept.
    from leaderboard.views.board import forget_anonymous_pages
    from tests.support.measured_configs import measure_three_ways

    measure_three_ways(user, hardware, models, make_result)
    client.get("/api/v1/leaderboard")
    client.get("/")
    measure(user, hardware, make_result, 2, [90.0, 91.0])  # now clearly faster than n_max 4's
    measure(user, hardware, make_result, 6, [70.0, 72.0])  # a row of its own
    kept = client.get("/api/v1/leaderboard").json()
    kept_page = client.get("/").content.decode()
    cache.clear()
    forget_anonymous_pages()
    fresh = client.get("/api/v1/leaderboard").json()
    assert kept == fresh and len(fresh["results"]) >= 4
    assert kept_page == client.get("/").content.decode()
    assert re.search(r"\d of \d[\d,]* drafted", kept_page)  # counts from the batches
    assert any(row["acceptance_draft_tokens"] for row in fresh["results"])
    assert any(row["baseline_tokens_per_second"] for row in fresh["results"])


def test_a_board_row_whose_rank_a_recorded_run_moves_shows_it_without_being_rendered_again(
    client, db, monkeypatch
):
    from leaderboard.services.board import rerank
    from leaderboard.templatetags import board_rows

    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    board_row(kind, "leader", 150.0)
    board_row(kind, "second row", 120.0)
    third = board_row(kind, "third row", 100.0)
    labels = ["leader", "second row", "third row"]
    assert ranked_labels(client.get("/").content.decode()) == labels
    rendered = []
    original = board_rows.render_to_string

    def counted(name, context=None, *args, **kwargs):
        if name == board_rows.ROW_TEMPLATE:
            rendered.append(context["row"]["entry"].pk)
        return original(name, context, *args, **kwargs)

    monkeypatch.setattr(board_rows, "render_to_string", counted)
    from leaderboard.selectors import board as board_selectors

    evidence_read = []
    row_evidence = board_selectors.row_evidence

    def evidence_counted(*, entries):
        evidence_read.extend(entry.pk for entry in entries)
        return row_evidence(entries=entries)

    monkeypatch.setattr(board_selectors, "row_evidence", evidence_counted)

    # The third row is measured faster: it passes the second, whose rank alone changes.
    LeaderboardEntry.objects.filter(pk=third.pk).update(tokens_per_second=130.0)
    rerank(ranking_key=third.ranking_key)
    services.raise_board_version(rankings=[third.ranking_key])
    page = client.get("/").content.decode()
    assert ranked_labels(page) == ["leader", "third row", "second row"]
    assert rendered == [third.pk]
    assert evidence_read == [third.pk]  # the evidence of the row rendered again, not the page's
    ranking = re.search(r'<table class="board" id="ranking">(.*?)</table>', page, re.S).group(1)
    cells = re.findall(r'<td class="rank">(\d+)', ranking)
    assert cells == ["1", "2", "3"] and "\x00" not in page


def test_a_rows_content_key_is_the_same_when_loaded_again_and_differs_when_a_figure_does(db):
    """content_cached keys a rendering by a digest of what the row is made of: the same row read
    twice (as two requests, or two processes, read it) finds the same key; one figure changed,
    however slightly, or a value the digest cannot pickle, gives another."""
    from leaderboard.selectors.cache import _digest

    hardware = Hardware.objects.create(slug="gpu", gpu_name="GPU")
    entry = board_row(hardware, "draft-simple n_max 4", 100.0)

    def loaded() -> LeaderboardEntry:
        return LeaderboardEntry.objects.select_related("config", "hardware").get(pk=entry.pk)

    first, second = loaded(), loaded()
    assert first is not second
    assert _digest(selectors.entry_signature(first, standing=False)) == _digest(
        selectors.entry_signature(second, standing=False)
    )
    LeaderboardEntry.objects.filter(pk=entry.pk).update(tokens_per_second=100.0000001)
    assert _digest(selectors.entry_signature(loaded(), standing=False)) != _digest(
        selectors.entry_signature(first, standing=False)
    )
    unpicklable = (selectors.entry_signature(first, standing=False), lambda: None)
    assert _digest(unpicklable) == _digest(unpicklable)
    assert _digest(unpicklable) != _digest(unpicklable[0])


def test_a_read_another_process_computed_is_kept_in_this_one_after_its_first_use(db, monkeypatch):
    # A page found in the shared cache and current is kept in the process's memory too: the
    # next requests take it from there, not from Redis (a round trip and 170 KB unpickled each).
    from leaderboard.selectors import cache as page_cache

    computed, fetched = [], []
    assert selectors.ranking_cached("scoped", {}, lambda: computed.append(1) or [100.0])
    monkeypatch.setattr(page_cache, "_KEPT", type(page_cache._KEPT)())  # another process
    real_get = page_cache.cache.get
    monkeypatch.setattr(
        page_cache.cache, "get", lambda *a, **k: fetched.append(a[0]) or real_get(*a, **k)
    )
    first = selectors.ranking_cached("scoped", {}, lambda: computed.append(1) or [0.0])
    again = selectors.ranking_cached("scoped", {}, lambda: computed.append(1) or [0.0])
    assert first == [100.0] and again is first and len(computed) == 1
    assert len([key for key in fetched if ":ranked:scoped:" in key]) == 1
