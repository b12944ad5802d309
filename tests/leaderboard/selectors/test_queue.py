"""Where a queued job stands (selectors.jobs.queue): its place in its hardware's queue (position,
jobs ahead), the typical duration of a job on its hardware and when it should start, played out on
the workers the running jobs hold; with hostile data (null or backwards timestamps, progress
that promises a start past any calendar) the start is unknown, never an error."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from leaderboard import selectors, services
from leaderboard.messaging import broker
from leaderboard.models import Job
from leaderboard.selectors.jobs.queue import estimated_wait_seconds, median_job_seconds, wait_text
from tests.support.progress_events import assert_every_surface_answers, post_progress

CONFIG = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 8}}


@pytest.fixture
def job(user, models, hardware, enqueued) -> Job:
    return services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)


@pytest.fixture
def quiet_broker(monkeypatch):
    """/hosts/ asks the broker which workers answer: here none, at once."""
    monkeypatch.setattr(broker, "live_workers", lambda: {})
    cache.clear()


def test_a_queued_job_behind_a_running_job_with_an_absurd_estimate_still_shows(
    client, job, signed_by_host, quiet_broker
):
    # A finished job times the hardware (ten seconds); the running one has 199,999 requests to
    # go at 10**15 seconds each: a start past any calendar.
    finished = job.created_at
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.SUCCEEDED,
        started_at=finished,
        finished_at=finished + timedelta(seconds=10),
    )
    running = Job.objects.create(
        owner=job.owner, config=job.config, hardware=job.hardware, engine_release="b1"
    )
    post_progress(running, {"phase": "started"}, signed_by_host)
    post_progress(
        running,
        {"phase": "measuring", "done": 1, "total": 200_000, "elapsed_s": 1e15},
        signed_by_host,
    )
    queued = Job.objects.create(
        owner=job.owner, config=job.config, hardware=job.hardware, engine_release="b1"
    )

    standing = selectors.queue_standing(job=queued)
    assert standing["queue_position"] == 1 and standing["estimated_start"] is None
    assert "unknown" in client.get(f"/jobs/{queued.pk}/").content.decode()
    assert assert_every_surface_answers(client, queued)["estimated_start"] is None
    assert assert_every_surface_answers(client, running)["progress"]["percent"] == 0


def test_queue_position_counts_the_jobs_submitted_before_it_on_the_same_hardware(
    first_job, job_factory
):
    other_kind = services.register_hardware(gpu_name="NVIDIA RTX 4090", memory_bytes=24 * 2**30)
    second = job_factory("queued", minute=200)
    third = job_factory("queued", minute=201)
    job_factory("queued", minute=100, hardware=other_kind)  # another queue: not ahead
    job_factory("succeeded", minute=1, started=0, took=60)  # finished: not ahead

    assert selectors.queue_standing(job=first_job)["queue_position"] == 1
    assert selectors.queue_standing(job=second)["queue_position"] == 2
    standing = selectors.queue_standing(job=third)
    assert standing["queue_position"] == 3 and standing["jobs_ahead"] == 2


def test_jobs_submitted_in_the_same_instant_keep_their_submission_order(first_job, job_factory):
    later = job_factory("queued", minute=300)
    twin = job_factory("queued", minute=300)
    assert selectors.queue_standing(job=later)["queue_position"] == 2
    assert selectors.queue_standing(job=twin)["queue_position"] == 3


def test_the_typical_duration_is_the_median_of_recent_succeeded_jobs_on_that_hardware(
    first_job, job_factory
):
    for minute, took in ((1, 100), (2, 300), (3, 200), (4, 10_000)):
        job_factory("succeeded", minute=minute, started=5, took=took)
    job_factory("failed", minute=5, started=5, took=1)  # failures do not time the queue
    job_factory("succeeded", minute=6, started=None)  # no start recorded: ignored
    assert median_job_seconds(hardware_id=first_job.hardware_id) == pytest.approx(250.0)
    assert median_job_seconds(hardware_id=first_job.hardware_id, recent=3) == pytest.approx(300.0)


def test_the_estimate_plays_the_queue_out_on_the_workers_running_jobs_hold():
    # One worker busy for 40 s more; two jobs ahead of 100 s each: starts in 240 s.
    assert estimated_wait_seconds(ahead=2, running_left=[40.0], typical_s=100.0) == 240.0
    # Two workers: 10 and 70 s left; three ahead: 10 -> 110, 70 -> 170, 110 -> 210; next free 170.
    assert estimated_wait_seconds(ahead=3, running_left=[70.0, 10.0], typical_s=100.0) == 170.0
    # Nothing runs: one worker is assumed, free now.
    assert estimated_wait_seconds(ahead=0, running_left=[], typical_s=100.0) == 0.0
    assert estimated_wait_seconds(ahead=1, running_left=[], typical_s=None) is None
    assert wait_text(None) == "unknown" and wait_text(30) == "under a minute"
    assert wait_text(12 * 60) == "about 12 min" and wait_text(3.5 * 3600) == "about 3.5 h"


def test_the_estimated_start_adds_the_running_jobs_time_left_and_the_jobs_ahead(
    first_job, job_factory
):
    for minute in range(1, 4):
        job_factory("succeeded", minute=minute, started=0, took=600)
    now = timezone.now()
    # Running for 100 s, a third of its requests done: 200 s to go by its progress.
    progress = {"phase": "measure", "done": 1, "total": 3, "elapsed_s": 100}
    running = job_factory("running", minute=110, progress=progress)
    Job.objects.filter(pk=running.pk).update(started_at=now - timedelta(seconds=100))
    mine = job_factory("queued", minute=200)

    standing = selectors.queue_standing(job=mine, now=now)
    assert standing["queue_position"] == 2
    assert standing["typical_job_seconds"] == pytest.approx(600.0)
    assert standing["estimated_wait_s"] == pytest.approx(200.0 + 600.0)
    assert standing["estimated_start"] == now + timedelta(seconds=800)


def test_a_running_job_without_progress_is_given_the_median_less_what_it_has_run(
    first_job, job_factory
):
    job_factory("succeeded", minute=1, started=0, took=300)
    now = timezone.now()
    running = job_factory("running", minute=110)
    Job.objects.filter(pk=running.pk).update(started_at=now - timedelta(seconds=500))
    standing = selectors.queue_standing(job=first_job, now=now)
    # It ran past the median: its worker is counted free now, the first job starts at once.
    assert standing["estimated_wait_s"] == pytest.approx(0.0)


def test_without_any_measured_job_the_start_is_unknown_and_a_started_job_has_no_standing(
    first_job, job_factory
):
    standing = selectors.queue_standing(job=first_job)
    assert standing["queue_position"] == 1 and standing["estimated_start"] is None
    done = job_factory("succeeded", minute=1, started=0, took=60)
    assert selectors.queue_standing(job=done)["queue_position"] is None
    assert selectors.queue_standing(job=done)["estimated_start"] is None


def test_jobs_with_null_or_backwards_timestamps_never_break_the_estimate(first_job, job_factory):
    job_factory("succeeded", minute=1, started=None)  # no start, no finish
    broken = job_factory("succeeded", minute=2, started=100, took=50)
    Job.objects.filter(pk=broken.pk).update(finished_at=broken.started_at - timedelta(hours=1))
    running = job_factory("running", minute=3, progress={"done": "x", "total": None})
    Job.objects.filter(pk=running.pk).update(started_at=None)
    standing = selectors.queue_standing(job=first_job)
    assert standing["queue_position"] == 1
    assert standing["typical_job_seconds"] is None and standing["estimated_start"] is None


def test_the_estimate_rests_on_inputs_read_once_a_window_the_place_is_counted_every_time(
    first_job, job_factory, settings, monkeypatch, django_assert_num_queries
):
    # A burst of submissions reads its hardware's typical duration and running jobs once per
    # SPECBOARD_QUEUE_ESTIMATE_SECONDS; each job's place is counted with its own query.
    from leaderboard.selectors.jobs import queue

    settings.SPECBOARD_QUEUE_ESTIMATE_SECONDS = 5
    job_factory("succeeded", minute=1, started=0, took=600)
    second = job_factory("queued", minute=200)

    assert selectors.queue_standing(job=first_job)["typical_job_seconds"] == pytest.approx(600.0)
    job_factory("succeeded", minute=2, started=0, took=1200)  # the median becomes 900 s
    third = job_factory("queued", minute=201)
    with django_assert_num_queries(1):
        standing = selectors.queue_standing(job=third)
    assert standing["queue_position"] == 3  # counted now: the jobs queued since are ahead
    assert standing["typical_job_seconds"] == pytest.approx(600.0)  # as read within the window

    kept = cache.get(queue._kept("inputs", first_job.hardware_id))
    assert kept[0] == pytest.approx(600.0)  # kept in the shared cache, not in the process
    cache.delete(queue._kept("inputs", first_job.hardware_id))  # the window has passed
    standing = selectors.queue_standing(job=second)
    assert standing["queue_position"] == 2
    assert standing["typical_job_seconds"] == pytest.approx(900.0)  # read again after it


def test_a_long_queue_is_counted_from_a_base_kept_for_a_window(
    first_job, job_factory, settings, monkeypatch
):
    # Counting a long queue visits every job ahead, so it is counted whole once a window and a
    # later job is counted from that base: the jobs ahead of it as they stood then, plus the
    # jobs from it to the later one, counted now. Here a queue over 2 ahead is long.
    from leaderboard.selectors.jobs import queue

    settings.SPECBOARD_QUEUE_ESTIMATE_SECONDS = 5
    monkeypatch.setattr(queue, "LONG_QUEUE", 2)
    ahead = [job_factory("queued", minute=100 + minute) for minute in range(3)]
    job_factory("succeeded", minute=1, started=0, took=60)  # not ahead
    counted = job_factory("queued", minute=200)  # after the three and the first job
    assert queue.jobs_ahead(job=ahead[0]) == 0  # short: counted whole, no base kept
    base_key = queue._kept("base", counted.hardware_id)
    assert queue.jobs_ahead(job=ahead[2]) == 2 and cache.get(base_key) is None
    assert queue.jobs_ahead(job=counted) == 4  # long: this count is the base
    assert cache.get(base_key) == ((counted.created_at, counted.pk), 4)

    twin = job_factory("queued", minute=200)  # the same instant: after it by id
    later = job_factory("queued", minute=201)
    Job.objects.filter(pk=ahead[0].pk).update(status=Job.Status.RUNNING)  # claimed since
    # Within the window the claimed job is still counted ahead, as the queue stood then; the
    # jobs from the base's job on are counted now, the base's own job among them.
    assert queue.jobs_ahead(job=twin) == 5 and queue.jobs_ahead(job=later) == 6
    Job.objects.filter(pk=counted.pk).update(status=Job.Status.CANCELLED)
    assert queue.jobs_ahead(job=later) == 5
    # A job ahead of the base is counted whole; and after the window, every job is again.
    assert queue.jobs_ahead(job=ahead[2]) == 1
    cache.delete(base_key)  # the window has passed
    assert queue.jobs_ahead(job=later) == 4
    assert selectors.queue_standing(job=twin)["queue_position"] == 4
