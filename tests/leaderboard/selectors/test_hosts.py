"""Who serves each hardware kind (selectors.jobs.hosts): a host online, offline, unknown or revoked
by its signed messages and the workers that answer, each kind's queue, running job and release,
and the broker's answer cached for the page. (The /hosts/ page is in
tests/leaderboard/views/test_host_pages.py, GET /api/v1/hosts in api/test_api_hosts.py.)"""

from __future__ import annotations

from datetime import timedelta

from django.core.cache import cache
from django.utils import timezone

from leaderboard import selectors, services
from leaderboard.messaging import broker
from leaderboard.models import GpuHost, Job, Run
from leaderboard.selectors.jobs.hosts import host_status, worker_host_name


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


def test_the_workers_answer_is_cached_for_the_page(monkeypatch):
    asked = []
    monkeypatch.setattr(broker, "live_workers", lambda: asked.append(1) or {"gpu@a": ["gpu.x"]})
    cache.clear()
    assert selectors.cached_live_workers() == {"gpu@a": ["gpu.x"]}
    assert selectors.cached_live_workers() == {"gpu@a": ["gpu.x"]}
    assert asked == [1]
