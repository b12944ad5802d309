"""Each request is stored once, as its run's request record, and read back whole through
`leaderboard.stored_results`; migration 0035 moves the copies stored before into the records."""

from __future__ import annotations

import csv
import importlib
import io
import json
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import connection

from leaderboard import services
from leaderboard.models import REQUEST_RECORD_FIELDS, RequestRecord, Run
from leaderboard.stored_results import (
    StoredResult,
    stored_requests,
    stored_result,
    whole_stored_result,
)
from tests.support.api_clients import SPECULATIVE

MIGRATION = importlib.import_module("leaderboard.migrations.0035_requests_stored_once")


@pytest.fixture
def recorded_file(models, hardware, user, enqueued, make_result) -> tuple[Run, dict]:
    """A recorded run and the result file it was recorded from."""
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    result = make_result(job.config.key, [100.0, 120.0, 110.0])
    return services.record_result(job_id=job.pk, result=result), result


def test_a_recorded_run_stores_each_request_once_and_reads_back_its_whole_file(recorded_file):
    run, result = recorded_file
    run.refresh_from_db()
    assert "requests" not in run.raw_result
    stored = run.requests.order_by("index")
    assert stored.count() == len(result["requests"])
    # Nothing of a record is in both its columns and its details.
    assert all(not set(record.details) & set(REQUEST_RECORD_FIELDS) for record in stored)
    whole = whole_stored_result(run.pk)
    assert isinstance(whole, dict)
    for read, written in zip(whole["requests"], result["requests"], strict=True):
        assert {key: read[key] for key in written} == json.loads(json.dumps(written))


def test_the_downloads_give_each_request_s_columns_as_the_file_wrote_them(client, recorded_file):
    run, result = recorded_file
    expected = [
        {key: record[key] for key in REQUEST_RECORD_FIELDS} for record in result["requests"]
    ]
    body = client.get(f"/runs/{run.pk}/requests.json").json()
    assert body["requests"] == json.loads(json.dumps(expected))
    table = list(csv.DictReader(io.StringIO(client.get(f"/runs/{run.pk}/requests.csv").text)))
    assert [row["output_sha256"] for row in table] == [r["output_sha256"] for r in expected]
    assert [float(row["decode_tokens_per_second"]) for row in table] == pytest.approx(
        [r["decode_tokens_per_second"] for r in expected]
    )


def test_the_view_of_a_stored_result_of_any_shape_has_its_defaults():
    for damaged in ([], "text", 5, None, {"summary": "text", "points": "x", "baseline": 3}):
        view = StoredResult.of(damaged)
        assert (view.summary, view.points, view.baseline, view.requests) == ({}, (), None, ())
        assert view.stored_points is None and view.gpus == [] and view.build_flags is None
    # A point of another shape keeps its place: requests name their points by position.
    assert StoredResult.of({"points": [1, {"concurrency": 2}]}).points == ({}, {"concurrency": 2})
    assert stored_result(None) == StoredResult()


def test_the_view_reads_the_quality_figures_and_the_paired_points_or_none_of_them():
    damaged = StoredResult.of({"summary": {"quality": 3, "quality_difference": []}})
    assert (damaged.quality, damaged.quality_difference, damaged.baseline_points) == (
        None,
        None,
        (),
    )
    scored = {"task_id": "t1", "correct": True}
    view = StoredResult.of(
        {"summary": {"quality": {"tasks": 2}}, "baseline": {"points": [{"concurrency": 1}]}},
        requests=[{"index": 0, "quality": scored}, {"index": 1, "quality": "x"}, {"index": 2}],
    )
    assert view.quality == {"tasks": 2} and view.baseline_points == ({"concurrency": 1},)
    # Only the scored requests, each with its index: the API names a task by its request.
    assert view.quality_scores == [(0, scored)]


def _as_stored_before(run: Run) -> list[dict]:
    """The run as it was stored before 0035: its whole records in its result, none in details."""
    whole = stored_requests([run.pk])[run.pk]
    Run.objects.filter(pk=run.pk).update(raw_result=run.raw_result | {"requests": whole})
    RequestRecord.objects.filter(run=run).update(details={})
    return whole


def test_the_migration_moves_the_stored_copies_into_the_records_and_back(recorded_file):
    run, _ = recorded_file
    run.refresh_from_db()
    whole = _as_stored_before(run)
    editor = SimpleNamespace(connection=connection)

    MIGRATION.store_requests_once(apps, editor)
    assert "requests" not in Run.objects.get(pk=run.pk).raw_result
    assert stored_requests([run.pk])[run.pk] == whole

    MIGRATION.put_requests_back(apps, editor)
    assert Run.objects.get(pk=run.pk).raw_result["requests"] == whole
