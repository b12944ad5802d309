"""Where a queued job stands and who serves its hardware: the queue selector (position, typical
duration, estimated start), the hosts selector (online, offline, unknown, revoked; each kind's
queue) and the broker it asks, and the jobs and hosts API fields, with hostile data that must
never break them. (The job page and /hosts/ are in tests/leaderboard/views/.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import broker, selectors, services
from leaderboard.models import GpuHost, Job, Run
from leaderboard.selectors.hosts import host_status, worker_host_name
from leaderboard.selectors.queue import estimated_wait_seconds, median_job_seconds, wait_text
from tests.support.job_histories import job_history, register_host, submit_first_job


@pytest.fixture
def first_job(user, models, hardware, enqueued) -> Job:
    """One queued baseline job submitted the ordinary way: its config row serves the others."""
    return submit_first_job(user, hardware)


@pytest.fixture
def job_factory(first_job):
    """Made-up job histories: jobs of the first job's config with chosen timestamps."""
    return job_history(first_job)


# The queue: position and estimated start ----------------------------------------------------------


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


# The API's fields ---------------------------------------------------------------------------------


def test_the_job_api_has_queue_position_and_estimated_start(first_job, job_factory):
    job_factory("succeeded", minute=1, started=0, took=90)
    mine = job_factory("queued", minute=200)
    api = APIClient()
    body = api.get(f"/api/v1/jobs/{mine.pk}").json()
    assert body["queue_position"] == 2
    start = timezone.datetime.fromisoformat(body["estimated_start"])
    # One job ahead (the first job) of the median's 90 s: it should start in 90 s.
    assert timedelta(seconds=80) < start - timezone.now() <= timedelta(seconds=90)
    done = job_factory("succeeded", minute=2, started=0, took=60)
    body = api.get(f"/api/v1/jobs/{done.pk}").json()
    assert body["queue_position"] is None and body["estimated_start"] is None


def test_the_api_schema_documents_the_new_fields(first_job):
    schema = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    job = schema["components"]["schemas"]["Job"]["properties"]
    assert job["queue_position"]["nullable"] is True
    assert job["estimated_start"]["format"] == "date-time"
    assert "/api/v1/hosts" in schema["paths"]


# Hosts: online, offline, unknown ------------------------------------------------------------------


@pytest.fixture
def host(hardware) -> GpuHost:
    return register_host(hardware)


def test_worker_node_names_name_their_host():
    assert worker_host_name("gpu@lab-a.example.org") == "lab-a"
    assert worker_host_name("gpu@Lab_A") == "lab_a"
    assert worker_host_name("celery") == "celery"


def test_a_host_that_sent_a_signed_message_recently_is_online_whatever_the_broker_says(host):
    now = timezone.now()
    status, reason = host_status(
        host=host, last_message_at=now - timedelta(seconds=90), workers=None, now=now
    )
    assert status == "online" and "90 s ago" in reason


def test_a_host_whose_named_worker_answers_is_online(host):
    now = timezone.now()
    workers = {"gpu@lab-a": [host.hardware.queue_name]}
    assert host_status(host=host, last_message_at=None, workers=workers, now=now)[0] == "online"


def test_a_quiet_host_is_offline_when_the_broker_answers_and_unknown_when_it_cannot(host):
    now = timezone.now()
    old = now - timedelta(hours=3)
    status, reason = host_status(host=host, last_message_at=old, workers={}, now=now)
    assert status == "offline" and "3 h ago" in reason
    status, reason = host_status(host=host, last_message_at=old, workers=None, now=now)
    assert status == "unknown" and "could not be asked" in reason
    # A worker of this kind that names no registered host may be this one.
    workers = {"gpu@7f3a9c0d2b1e": [host.hardware.queue_name], "db@x": ["db"]}
    status, reason = host_status(host=host, last_message_at=None, workers=workers, now=now)
    assert status == "unknown" and "1 worker(s)" in reason


def test_a_worker_named_for_another_registered_host_is_that_host_not_this_one(host):
    now = timezone.now()
    workers = {"gpu@lab-b": [host.hardware.queue_name]}
    registered = frozenset({"lab-a", "lab-b"})
    status, reason = host_status(
        host=host, last_message_at=None, workers=workers, now=now, registered=registered
    )
    assert status == "offline" and "never sent a signed message" in reason


def test_a_revoked_host_says_so(host):
    GpuHost.objects.filter(pk=host.pk).update(revoked=True)
    host.refresh_from_db()
    assert (
        host_status(host=host, last_message_at=timezone.now(), workers={}, now=timezone.now())[0]
        == "revoked"
    )


def test_the_host_board_shows_each_kind_its_queue_running_job_and_release(
    host, first_job, job_factory, make_result
):
    other = services.register_gpu_host(name="lab-b", hardware_slug=host.hardware.slug)[0]
    job_factory("queued", minute=150)
    running = job_factory(
        "running", minute=100, started=0, host=host, seen=timedelta(seconds=30),
        progress={"phase": "measure", "done": 1, "total": 4, "elapsed_s": 5.0},
    )  # fmt: skip
    served = job_factory("succeeded", minute=10, started=0, took=60, host=other)
    Job.objects.filter(pk=served.pk).update(engine_release="b11000")
    services.record_result(job_id=first_job.pk, result=make_result(first_job.config.key, [50.0]))
    Run.objects.filter(job=first_job).update(engine_release="b11434")
    Job.objects.filter(pk=first_job.pk).update(host=other)

    board = selectors.host_board(workers={}, broker_counts=False)
    (kind,) = board["hardware"]
    assert kind["queued_jobs"] == 1 and kind["running_jobs"] == 1
    assert kind["workers_answering"] == 0 and kind["broker_waiting"] is None
    by_name = {row["name"]: row for row in kind["hosts"]}
    assert by_name["lab-a"]["status"] == "online"
    assert by_name["lab-a"]["running_job"]["id"] == running.pk
    assert by_name["lab-a"]["running_job"]["percent"] == 25
    assert by_name["lab-a"]["engine_release"] == "b11434"
    assert by_name["lab-a"]["engine_release_from"] == "job"
    assert by_name["lab-b"]["status"] == "offline" and by_name["lab-b"]["running_job"] is None
    # The latest run it measured wins over the latest job's requested release.
    assert by_name["lab-b"]["engine_release"] == "b11434"
    assert by_name["lab-b"]["engine_release_from"] == "run"
    assert kind["online_hosts"] == 1


def test_a_host_with_no_jobs_and_a_kind_with_no_hosts_read_as_such(hardware, host):
    services.register_hardware(gpu_name="NVIDIA L4", memory_bytes=24 * 2**30)
    board = selectors.host_board(workers=None, broker_counts=False)
    assert board["workers_known"] is False
    kinds = {kind["slug"]: kind for kind in board["hardware"]}
    assert len(kinds) == 2
    (lab,) = kinds[hardware.slug]["hosts"]
    assert lab["status"] == "unknown" and lab["engine_release"] == "" and lab["running_job"] is None
    lonely = next(kind for slug, kind in kinds.items() if slug != hardware.slug)
    assert lonely["hosts"] == [] and lonely["workers_answering"] is None


def test_the_broker_is_asked_which_workers_answer_and_how_long_the_queues_are(hardware):
    # The site's broker (Redis in the tests): no worker consumes a test queue, so it answers {}
    # for its workers or None when unreachable; never an exception.
    workers = broker.live_workers(timeout_s=0.3)
    assert workers is None or all(isinstance(q, list) for q in workers.values())
    lengths = broker.queue_lengths([hardware.queue_name])
    assert lengths is None or lengths == {hardware.queue_name: 0}


def test_the_workers_answer_is_cached_for_the_page(monkeypatch):
    asked = []
    monkeypatch.setattr(broker, "live_workers", lambda: asked.append(1) or {"gpu@a": ["gpu.x"]})
    cache.clear()
    assert selectors.cached_live_workers() == {"gpu@a": ["gpu.x"]}
    assert selectors.cached_live_workers() == {"gpu@a": ["gpu.x"]}
    assert asked == [1]


def test_the_hosts_api_lists_each_kind_and_never_a_key(host, job_factory):
    job_factory("queued", minute=100)
    response = APIClient().get("/api/v1/hosts")
    assert response.status_code == 200
    body = response.json()
    assert body["online_window_s"] == 900
    (kind,) = body["hardware"]
    assert kind["queued_jobs"] >= 1
    (row,) = kind["hosts"]
    assert row["name"] == "lab-a" and row["status"] in {"offline", "unknown"}
    assert host.key not in response.content.decode()
    assert "key" not in row
