"""Where a queued job stands (selectors.queue): its place in its hardware's queue and when it
should start, which is unknown, never an error, when a running job's progress promises a start
past any calendar."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache

from leaderboard import broker, selectors, services
from leaderboard.models import Job
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
