"""A board row's content read as plain values (selectors.row_content): the signature its API
rendering is kept under changes with anything the row shows (its own figures, its config's,
its hardware's, its baseline row's best batch) and not with its place in its ranking; a page
after a recorded run (the API's and the front page's) reads as models only the rows it renders
again; a row deleted between the two reads is left out, never served from another row."""

from __future__ import annotations

import re

from leaderboard import selectors, services
from leaderboard.api.views.board import _serialized_rows
from leaderboard.models import Config, Hardware, LeaderboardEntry
from leaderboard.selectors import row_content
from leaderboard.selectors.cache import _digest
from leaderboard.services.board import rerank
from leaderboard.templatetags import board_rows
from tests.support.board_rows import board_row
from tests.support.measured_configs import measured_run


def content_key(entry: LeaderboardEntry) -> str:
    values = selectors.row_contents(LeaderboardEntry.objects.filter(pk=entry.pk)).get()
    return _digest(selectors.content_signature(values))


def test_every_column_of_a_row_its_config_and_hardware_is_in_its_content():
    columns = set(row_content.content_columns())
    assert {field.attname for field in LeaderboardEntry._meta.concrete_fields} <= columns
    assert {f"hardware__{field.attname}" for field in Hardware._meta.concrete_fields} <= columns
    config = {f"config__{field.attname}" for field in Config._meta.concrete_fields}
    # The canonical JSON is stood for by the key, its digest.
    assert config - columns == {"config__canonical"} and "config__key" in columns
    assert "baseline_entry__best_run_id" in columns


def test_a_rows_content_key_changes_with_what_it_shows_and_not_with_its_rank(
    user, hardware, make_result, models
):
    a_batch = measured_run(user, hardware, make_result, [100.0, 101.0])
    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    baseline = board_row(kind, "baseline", 50.0, spec_label="none")
    row = board_row(kind, "draft", 100.0)
    LeaderboardEntry.objects.filter(pk=row.pk).update(baseline_entry=baseline)
    before = content_key(row)
    assert content_key(row) == before  # read again, found again

    # Its place in its ranking is set on a kept rendering afterwards: no new key.
    LeaderboardEntry.objects.filter(pk=row.pk).update(rank=7, like_leader=True, like_above=False)
    assert content_key(row) == before

    changes = [
        lambda: LeaderboardEntry.objects.filter(pk=row.pk).update(tokens_per_second=100.0000001),
        lambda: Config.objects.filter(pk=row.config_id).update(label="draft, renamed"),
        lambda: Hardware.objects.filter(pk=kind.pk).update(gpu_name="GPU A, 48 GB"),
        # The baseline row's best batch: the evidence's denominator.
        lambda: LeaderboardEntry.objects.filter(pk=baseline.pk).update(best_run_id=a_batch.pk),
    ]
    seen = {before}
    for change in changes:
        change()
        key = content_key(row)
        assert key not in seen
        seen.add(key)


def test_a_page_after_a_recorded_run_reads_only_the_changed_row_as_a_model(client, db, monkeypatch):
    from leaderboard.api.views import board as board_view

    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    rows = [board_row(kind, f"row {index}", 100.0 + index) for index in range(5)]
    first = client.get("/api/v1/leaderboard").json()["results"]
    read_as_models = []
    entries_by_pk = selectors.entries_by_pk

    def counted(pks):
        pks = list(pks)
        read_as_models.extend(pks)
        return entries_by_pk(pks)

    monkeypatch.setattr(board_view.selectors, "entries_by_pk", counted)
    slowest = rows[0]
    LeaderboardEntry.objects.filter(pk=slowest.pk).update(tokens_per_second=200.0)
    rerank(ranking_key=slowest.ranking_key)
    services.raise_board_version(rankings=[slowest.ranking_key])
    listed = client.get("/api/v1/leaderboard").json()["results"]
    assert read_as_models == [slowest.pk]
    assert [(row["label"], row["rank"]) for row in listed] == [
        ("row 0", 1),
        *[(row["label"], index + 2) for index, row in enumerate(first[:4])],
    ]
    assert listed[0]["tokens_per_second"] == 200.0


def test_a_row_deleted_between_its_values_and_its_model_is_left_out(db):
    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    kept, gone = board_row(kind, "kept", 110.0), board_row(kind, "gone", 100.0)
    values = list(selectors.row_contents(LeaderboardEntry.objects.order_by("-tokens_per_second")))
    LeaderboardEntry.objects.filter(pk=gone.pk).delete()
    serialized = _serialized_rows(values)
    assert serialized[1] is None
    assert serialized[0]["id"] == kept.pk and serialized[0]["label"] == "kept"


def test_a_page_read_as_values_is_kept_only_until_a_ranking_it_shows_changes(client, db):
    """The rankings a page depends on are noted from its rows' values, not only from the rows
    read as models: after a change re-renders one ranking's row, a change in the page's other
    ranking (whose rows came from the content cache) still shows at once."""
    kinds = [Hardware.objects.create(slug=f"gpu-{n}", gpu_name=f"GPU {n}") for n in "ab"]
    first, second = (board_row(kind, f"row on {kind.slug}", 100.0) for kind in kinds)
    assert first.ranking_key != second.ranking_key

    def tokens_per_second() -> dict[str, float]:
        rows = client.get("/api/v1/leaderboard").json()["results"]
        return {row["label"]: row["tokens_per_second"] for row in rows}

    assert tokens_per_second() == {"row on gpu-a": 100.0, "row on gpu-b": 100.0}
    for row, value in ((first, 110.0), (second, 120.0), (first, 130.0)):
        LeaderboardEntry.objects.filter(pk=row.pk).update(tokens_per_second=value)
        services.raise_board_version(rankings=[row.ranking_key])
        assert tokens_per_second()[row.config.label] == value


def ranked_table(page: str) -> str:
    return re.search(r'<table class="board" id="ranking">(.*?)</table>', page, re.S).group(1)


def test_the_front_page_after_a_recorded_run_reads_only_the_changed_row_as_a_model(
    client, db, monkeypatch
):
    """The board's ranked rows are read as values; their ranks, headings and baselines need no
    model, and only the row whose rendering is not kept is read as one (with its relations)."""
    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    baseline = board_row(kind, "no drafting", 50.0, spec_label="none")
    rows = [board_row(kind, f"row {index}", 100.0 + index) for index in range(5)]
    LeaderboardEntry.objects.filter(pk__in=[row.pk for row in rows]).update(baseline_entry=baseline)
    services.raise_board_version()
    client.get("/")
    read_as_models = []
    entries_by_pk = row_content.entries_by_pk

    def counted(pks, **kwargs):
        pks = list(pks)
        read_as_models.extend(pks)
        return entries_by_pk(pks, **kwargs)

    monkeypatch.setattr(row_content, "entries_by_pk", counted)
    # The slowest row passes three others (the leader, which carries the heading, stays).
    slowest = rows[0]
    LeaderboardEntry.objects.filter(pk=slowest.pk).update(tokens_per_second=103.5)
    rerank(ranking_key=slowest.ranking_key)
    services.raise_board_version(rankings=[slowest.ranking_key])
    page = client.get("/").content.decode()
    assert read_as_models == [slowest.pk]
    table = ranked_table(page)
    assert re.findall(r">(row \d)</a>", table) == ["row 4", "row 0", "row 3", "row 2", "row 1"]
    assert re.findall(r'<td class="rank">(\d+)', table) == ["1", "2", "3", "4", "5"]
    assert "<strong>103.50</strong>" in table
    # The ranking's heading and its baseline, the denominator, from the values alone.
    assert table.count('class="ranking-heading"') == 1
    assert "<strong>50.00</strong> tok/s" in table


def test_a_front_page_row_deleted_between_its_values_and_its_model_renders_nothing(db):
    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    board_row(kind, "kept", 110.0)
    gone = board_row(kind, "gone", 100.0)
    values = list(selectors.row_contents(LeaderboardEntry.objects.order_by("-tokens_per_second")))
    rows = row_content.content_rows(
        [row_content.ContentRow(v) for v in values], ranks={}, newest=None
    )
    LeaderboardEntry.objects.filter(pk=gone.pk).delete()
    html = board_rows.board_rows(rows)
    assert rows[1]["entry"] is None and rows[0]["entry"].config.label == "kept"
    assert ">kept</a>" in html and "gone" not in html


def test_the_front_page_read_as_values_is_kept_only_until_a_ranking_it_shows_changes(client, db):
    kinds = [Hardware.objects.create(slug=f"gpu-{n}", gpu_name=f"GPU {n}") for n in "ab"]
    first, second = (board_row(kind, f"row on {kind.slug}", 100.0) for kind in kinds)
    assert first.ranking_key != second.ranking_key
    assert ranked_table(client.get("/").content.decode()).count("<strong>100.00</strong>") == 2
    for row, value in ((first, 110.0), (second, 120.0), (first, 130.0)):
        LeaderboardEntry.objects.filter(pk=row.pk).update(tokens_per_second=value)
        services.raise_board_version(rankings=[row.ranking_key])
        assert f"<strong>{value:.2f}</strong>" in ranked_table(client.get("/").content.decode())
