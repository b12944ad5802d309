"""A GPU host's progress event (leaderboard.messaging.progress), read and written alike: a host may
send any event, and what the site stores of it is well typed, every real event still passes, and no
page or API resource breaks on it, nor on rows stored before."""

from __future__ import annotations

import json
import math

import pytest
from django.core.cache import cache
from django.db import connection

from leaderboard import selectors, services, tasks
from leaderboard.messaging import broker
from leaderboard.messaging.progress import LIVE_LOG_CHARS, clean_progress
from leaderboard.models import Job
from runner.benchmark import _Progress
from runner.model_cache import download_progress
from tests.support.progress_events import assert_every_surface_answers, post_progress

CONFIG = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 8}}


def signing_can_hold(event: object) -> bool:
    """Whether a host can sign this event: the signature's JSON has no NaN or infinities."""
    try:
        json.dumps(event, allow_nan=False)
    except ValueError:
        return False
    return True


def postgres_can_hold(event: object) -> bool:
    """Whether PostgreSQL's jsonb can store this event: it refuses a NUL in any string."""
    return "\\u0000" not in json.dumps(event)


# A hostile event and what the site keeps of it: the well-typed figures beside the bad ones.
HOSTILE_EVENTS = [
    ({"phase": "measuring", "done": None, "total": "many"}, {"phase": "measuring"}),
    (
        {"phase": "measuring", "done": 10**400, "total": -3, "tokens": 2**70, "elapsed_s": 2},
        {"phase": "measuring", "elapsed_s": 2.0},
    ),
    (
        {"phase": "measuring", "done": True, "total": 4.5, "elapsed_s": -1.0, "tokens": 9},
        {"phase": "measuring", "tokens": 9},
    ),
    (
        {"phase": "warmup", "done": "1", "total": [4], "elapsed_s": "soon", "tokens": {"n": 1}},
        {"phase": "warmup"},
    ),
    ({"phase": "x" * 5000, "done": 1, "total": 4}, {"done": 1, "total": 4}),
    ({"phase": "measuring\x00<script>", "done": 1, "total": 4}, {"done": 1, "total": 4}),
    ({"phase": ["measuring"], "done": 1, "total": 4, "extra": "x"}, {"done": 1, "total": 4}),
    ({"phase": 7, "done": 5, "total": 4, "elapsed_s": 1e300}, {"done": 5, "total": 4}),
    (
        {"phase": "downloading", "downloaded_bytes": "3", "total_bytes": 10**30},
        {"phase": "downloading"},
    ),
    (
        {"phase": "downloading", "downloaded_bytes": 9 * 10**9, "total_bytes": 10**9},
        {"phase": "downloading", "downloaded_bytes": 9 * 10**9, "total_bytes": 10**9},
    ),
    (
        {"phase": "downloading", "downloaded_bytes": 10**9, "total_bytes": 0},
        {"phase": "downloading", "downloaded_bytes": 10**9, "total_bytes": 0},
    ),
    # NaN and infinities cannot be signed (leaderboard.messaging.signing), but an unsigned host may
    # send them.
    (
        {"phase": "measuring", "done": 1, "total": 4, "elapsed_s": math.nan, "tokens": math.inf},
        {"phase": "measuring", "done": 1, "total": 4},
    ),
    (
        {"phase": "downloading", "downloaded_bytes": -math.inf, "total_bytes": math.nan},
        {"phase": "downloading"},
    ),
]
SIGNABLE = [(event, kept) for event, kept in HOSTILE_EVENTS if signing_can_hold(event)]
# What the old record_progress stored of whatever a host sent, straight into the row (no
# database holds NaN or infinities in a JSON column: those never got that far).
STORED_BEFORE_THE_FIX = [event for event, _ in SIGNABLE] + [
    {"phase": "x\x00" * 5000, "done": 10**400, "total": 4},
    {"done": 3, "total": 4, "tokens": "lots", "elapsed_s": [1]},
]


def real_events() -> list[dict]:
    """The progress events the runner and the model cache really send, made by their own code."""
    events: list[dict] = []
    tracker = _Progress(total=6, callback=events.append)
    tracker.report("loading")
    tracker.recent_log = lambda: "llama-server listening\n"
    tracker.done, tracker.tokens = 3, 4500
    for phase in ("warmup", "measuring", "baseline", "baseline margins"):
        tracker.report(phase)
    report = download_progress(events.append, every_s=0)
    report(0, 16_900_000_000)
    report(16_900_000_000, 16_900_000_000)
    return events + [{"phase": "started"}, {"phase": "requeued"}, {"phase": "done"}]


@pytest.fixture
def job(user, models, hardware, enqueued) -> Job:
    return services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)


@pytest.fixture
def quiet_broker(monkeypatch):
    """/hosts/ asks the broker which workers answer: here none, at once."""
    monkeypatch.setattr(broker, "live_workers", lambda: {})
    cache.clear()


@pytest.mark.parametrize("event", real_events(), ids=lambda event: event["phase"])
def test_every_progress_event_the_runner_and_the_model_cache_send_is_kept_whole(event):
    figures = {key: value for key, value in event.items() if key != "log_tail"}
    assert clean_progress(event) == figures


@pytest.mark.parametrize(("event", "kept"), HOSTILE_EVENTS)
def test_a_hostile_event_keeps_only_its_well_typed_figures(event, kept):
    assert clean_progress(event) == kept


@pytest.mark.parametrize("event", [None, [1, 2], "started", 42])
def test_an_event_that_is_no_object_keeps_nothing(event):
    assert clean_progress(event) == {}


def test_the_real_events_pass_through_the_signed_task_path_unchanged(job, signed_by_host):
    post_progress(job, {"phase": "started"}, signed_by_host)
    for event in real_events()[:-3]:
        post_progress(job, event, signed_by_host)
        job.refresh_from_db()
        assert job.progress == {key: value for key, value in event.items() if key != "log_tail"}
    assert job.log_tail == "llama-server listening\n"
    assert job.status == Job.Status.RUNNING


@pytest.mark.parametrize(("event", "kept"), SIGNABLE)
def test_a_hostile_host_cannot_break_the_job_page_the_hosts_page_or_the_api(
    client, job, signed_by_host, quiet_broker, event, kept
):
    post_progress(job, {"phase": "started"}, signed_by_host)
    post_progress(job, event, signed_by_host)

    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.progress == kept
    progress = assert_every_surface_answers(client, job)["progress"]
    assert progress["phase"] == kept.get("phase", "")
    assert (progress["done"], progress["total"]) == (kept.get("done", 0), kept.get("total", 0))
    assert 0 <= progress["percent"] <= 100


def test_an_unsigned_event_with_nan_and_infinities_is_stored_without_them(job, settings):
    # A deployment that does not require signatures; the old service's UPDATE failed on NaN.
    settings.SPECBOARD_REQUIRE_HOST_SIGNATURES = False
    for event in ({"phase": "started"}, HOSTILE_EVENTS[-2][0]):
        tasks.record_progress_task.apply(kwargs={"job_id": job.pk, "progress": event}).get()
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.progress == HOSTILE_EVENTS[-2][1]


def test_a_hostile_log_tail_is_kept_short_and_without_nuls(job, signed_by_host):
    post_progress(job, {"phase": "started"}, signed_by_host)
    post_progress(job, {"phase": "loading", "log_tail": "a\x00b" * 3000}, signed_by_host)
    job.refresh_from_db()
    assert job.log_tail == "ab" * (LIVE_LOG_CHARS // 2)
    post_progress(job, {"phase": "loading", "log_tail": ["not", "text"]}, signed_by_host)
    job.refresh_from_db()
    assert job.log_tail == "ab" * (LIVE_LOG_CHARS // 2)  # the list is ignored


def test_a_hostile_event_that_is_no_object_stores_nothing_and_breaks_nothing(
    client, job, signed_by_host, quiet_broker
):
    post_progress(job, {"phase": "started"}, signed_by_host)
    post_progress(job, ["started"], signed_by_host)
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.progress == {}
    assert assert_every_surface_answers(client, job)["progress"]["phase"] == ""


@pytest.mark.parametrize("row", STORED_BEFORE_THE_FIX)
def test_rows_stored_before_the_fix_still_show_everywhere(
    client, job, signed_by_host, quiet_broker, row
):
    if connection.vendor == "postgresql" and not postgres_can_hold(row):
        pytest.skip("PostgreSQL's jsonb cannot hold a NUL")
    post_progress(job, {"phase": "started"}, signed_by_host)
    Job.objects.filter(pk=job.pk).update(progress=row)
    kept = clean_progress(row)

    progress = assert_every_surface_answers(client, job)["progress"]
    assert progress["phase"] == kept.get("phase", "")
    assert (progress["done"], progress["total"]) == (kept.get("done", 0), kept.get("total", 0))
    assert 0 <= progress["percent"] <= 100
    (kind,) = selectors.host_board(workers={}, broker_counts=False)["hardware"]
    (host,) = kind["hosts"]
    assert host["running_job"]["id"] == job.pk
    assert host["running_job"]["phase"] == kept.get("phase", "")
