"""The /hosts/ page: each GPU host with its status, in the site's navigation, never its key; hostile
host and job data never breaks it (nor the job page and the API beside it)."""

from __future__ import annotations

from datetime import timedelta

from rest_framework.test import APIClient

from leaderboard import selectors, services
from leaderboard.models import Job


def test_the_hosts_page_lists_hosts_with_their_status_and_is_in_the_nav(client, host, job_factory):
    job_factory("running", minute=100, started=0, host=host, seen=timedelta(seconds=10))
    page = client.get("/hosts/").content.decode()
    assert '<a href="/hosts/">Hosts</a>' in page
    assert 'data-host="lab-a"' in page and 'data-status="online"' in page
    assert "1</strong> job queued" in page or "0</strong> jobs queued" in page
    assert host.key not in page


def test_hostile_host_data_never_500s(client, hardware, host, first_job, job_factory):
    # A host whose jobs have no timestamps and odd progress, and a host with no jobs at all.
    services.register_gpu_host(name="empty", hardware_slug=hardware.slug)
    odd = job_factory("running", minute=1, host=host, progress={"done": None, "total": "many"})
    Job.objects.filter(pk=odd.pk).update(started_at=None, host_seen_at=None)
    page = client.get("/hosts/")
    assert page.status_code == 200 and f"job {odd.pk}</a>" in page.content.decode()
    assert APIClient().get("/api/v1/hosts").status_code == 200
    # A queued job behind a running job without timestamps, and jobs with none at all.
    queued = job_factory("queued", minute=5)
    Job.objects.filter(pk=queued.pk).update(started_at=None, finished_at=None)
    assert client.get(f"/jobs/{queued.pk}/").status_code == 200
    # Submitted (made up) before the first job: it is ahead of it.
    assert APIClient().get(f"/api/v1/jobs/{queued.pk}").json()["queue_position"] == 1
    assert selectors.queue_standing(job=first_job)["queue_position"] == 2
