"""The board's reads (selectors.board): which rows a page gives (filtered by type, source and
hardware kind, with their filter choices, staleness and best answers)."""

from __future__ import annotations

import pytest

from leaderboard import selectors, services
from leaderboard.models import EngineBuild, GpuHost, Hardware, Job
from tests.support.baselines import finish, speculative_and_baseline
from tests.support.board_rows import board_row as row
from tests.support.gpu_kinds import GIB
from tests.support.pages import text


@pytest.fixture
def jobs(user, models, hardware, enqueued) -> tuple[Job, Job]:
    """A speculative job and its paired baseline, submitted and measured separately."""
    return speculative_and_baseline(user, hardware)


def test_leaderboard_filters_and_sorting(jobs, make_result):
    speculative, baseline = jobs
    finish(baseline, make_result(baseline.config.key, [50.0]))
    finish(speculative, make_result(speculative.config.key, [100.0], draft=(10, 5)))

    by_speed = list(selectors.leaderboard_entries())
    assert [e.config for e in by_speed] == [speculative.config, baseline.config]
    assert [e.config for e in selectors.leaderboard_entries(spec_type="none")] == [baseline.config]
    assert [e.config for e in selectors.leaderboard_entries(spec_type="draft-simple")] == [
        speculative.config
    ]
    assert list(selectors.leaderboard_entries(spec_type="draft-dflash")) == []
    # An exact match on the stored types: no prefix or substring of a type matches.
    assert list(selectors.leaderboard_entries(spec_type="draft")) == []
    assert list(selectors.leaderboard_entries(spec_type="simple")) == []
    by_acceptance = list(selectors.leaderboard_entries(ordering="acceptance_rate"))
    assert by_acceptance[0].config == speculative.config
    assert list(selectors.leaderboard_entries(source="self-reported")) == []


def test_the_hardware_filter_names_a_kind_by_its_gpus(both_rows):
    choices = dict(selectors.leaderboard_filter_choices()["hardware"])
    assert choices == {
        "2x-rtx-3090-24gb": "2x RTX 3090 24GB (2x-rtx-3090-24gb)",
        "rtx-3090-24gb": "RTX 3090 (rtx-3090-24gb)",
    }


def test_best_answers_from_the_kinds_a_person_has(both_rows):
    one, two = both_rows
    peak = one.peak_memory_bytes
    assert peak == two.peak_memory_bytes

    def answered(**asked) -> set[int]:
        answers = selectors.best_config_for(target_name=one.config.target_name, **asked)
        return {answer.best.pk for answer in answers}

    # One GPU that holds the row: the single-GPU row only, never the one measured on two.
    assert answered(memory_bytes=peak, gpu_count=1) == {one.pk}
    # Two GPUs, each holding half of it: the two-GPU row fits them, the one-GPU row does not.
    assert answered(memory_bytes=peak // 2 + 1, gpu_count=2) == {two.pk}
    assert answered(memory_bytes=peak, gpu_count=2) == {one.pk, two.pk}
    # A kind picked: its own rows, at its GPUs' memory.
    assert answered(memory_bytes=24 * GIB, gpu_count=2, hardware=two.hardware) == {two.pk}


def test_a_best_answers_row_reads_each_column_into_its_own_field(both_rows):
    """/best/ reads its rows as values (`FitRow`): each value lands in the field of its name, and
    every row of a kind shares that kind's one instance."""
    from dataclasses import fields

    from leaderboard.models import LeaderboardEntry
    from leaderboard.selectors.board.rows import FitRow

    names = [field.name for field in fields(FitRow)]
    assert FitRow.COLUMNS[: FitRow.OWN] == tuple(names[: FitRow.OWN])
    assert FitRow.COLUMNS[FitRow.OWN : FitRow.HARDWARE] == (
        "config__key",
        "config__label",
        "config__spec_label",
    )
    assert FitRow.COLUMNS[FitRow.HARDWARE] == "hardware_id"
    one, _ = both_rows
    answers = selectors.best_config_for(
        target_name=one.config.target_name, memory_bytes=one.peak_memory_bytes
    )
    (best,) = [answer.best for answer in answers]
    stored = LeaderboardEntry.objects.select_related("config", "best_run").get(pk=best.pk)
    for name in FitRow.COLUMNS[1 : FitRow.OWN]:
        assert getattr(best, name) == getattr(stored, name), name
    assert (best.config.key, best.config.label) == (stored.config.key, stored.config.label)
    assert best.config.is_speculative == stored.config.is_speculative
    assert best.hardware == stored.hardware and best.memory_kind == stored.best_run.memory_kind


@pytest.fixture
def gpu(db) -> Hardware:
    return Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")


def test_a_self_reported_release_string_cannot_make_measured_rows_stale(client, gpu):
    # Both releases are ones the site knows (an admin registered a host for each).
    for name, release in (("lab-a", "b11434"), ("lab-b", "b99999")):
        GpuHost.objects.create(name=name, hardware=gpu, key="0" * 64, engine_release=release)
    EngineBuild.objects.create(release="b11434")
    EngineBuild.objects.create(release="b99999")
    row(gpu, "measured", 100.0, engine_release="b11434")
    row(gpu, "claimed", 90.0, engine_release="b99999", self_reported=True)

    assert selectors.newest_release_number() == 11434
    page = text(client.get("/", {"all": "1"}))
    assert ">stale</span>" not in page

    # A measured row on the newer release does make the older one stale.
    row(gpu, "measured later", 80.0, engine_release="b99999")
    services.raise_board_version(row_set=True)
    assert selectors.newest_release_number() == 99999
    assert ">stale</span>" in text(client.get("/", {"all": "1"}))


def test_a_rankings_denominator_is_its_fastest_ranked_baseline_read_from_its_own_index(db):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from leaderboard.models import LeaderboardEntry

    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    drafts = [row(kind, f"draft {index}", 200.0 + index) for index in range(30)]
    row(kind, "synthetic baseline", 90.0, spec_label="none", synthetic=True)
    slow = row(kind, "slow baseline", 50.0, spec_label="none")
    fast = row(kind, "fast baseline", 60.0, spec_label="none")
    assert {slow.ranking_key, fast.ranking_key} == {drafts[0].ranking_key}
    with CaptureQueriesContext(connection) as read:
        assert [entry.pk for entry in selectors.baseline_rows(rankings=drafts)] == [fast.pk]
    # A row whose own copy of the speculative type disagrees with its config's is not taken
    # for a baseline (both are asked).
    LeaderboardEntry.objects.filter(pk=fast.pk).update(spec_label="draft-simple")
    assert [entry.pk for entry in selectors.baseline_rows(rankings=drafts)] == [slow.pk]
    if connection.vendor != "postgresql":
        return
    (query,) = read.captured_queries
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + query["sql"])
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert "entry_ranking_baselines" in plan, plan
