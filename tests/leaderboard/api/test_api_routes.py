"""The API's routes: a GPU host's progress, failure and result reach the site only as signed
Celery tasks on the db queue, never through a URL, whatever a request sends."""

from __future__ import annotations

import itertools
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import get_resolver, reverse
from django.utils import timezone

from leaderboard import services
from leaderboard.api import urls as api_urls
from leaderboard.models import Job, Run
from leaderboard.services import jobs as job_services
from leaderboard.services import results as result_services
from tests.support.api_clients import SPECULATIVE, token_client

WORKER_SERVICES = {
    "record_result": result_services,
    "record_progress": job_services,
    "record_failure": job_services,
}


def test_no_url_routes_to_the_worker_result_path():
    def callbacks(resolver):
        for pattern in resolver.url_patterns:
            if hasattr(pattern, "url_patterns"):
                yield from callbacks(pattern)
            else:
                yield pattern.callback

    forbidden = {services.record_result, services.record_progress, services.record_failure}
    for callback in callbacks(get_resolver()):
        view = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
        assert callback not in forbidden
        if view is not None:
            source = " ".join(
                getattr(getattr(view, name, None), "__qualname__", "") for name in dir(view)
            )
            assert "record_result" not in source and "record_progress" not in source


def api_paths(values: dict[str, list]) -> list[str]:
    """Every API route as a path, its parameters filled with each of the given values."""
    paths = []
    for pattern in api_urls.urlpatterns:
        names = list(pattern.pattern.regex.groupindex)
        for chosen in itertools.product(*(values[name] for name in names)):
            paths.append(reverse(pattern.name, kwargs=dict(zip(names, chosen, strict=True))))
    return paths


@pytest.fixture
def running_job(models, hardware, user, enqueued) -> Job:
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, started_at=timezone.now())
    job.refresh_from_db()
    return job


def test_no_api_request_records_a_worker_s_progress_failure_or_result(
    running_job, recorded, make_result, django_user_model, monkeypatch
):
    reached = []
    for name, module in WORKER_SERVICES.items():

        def spy(*args, _name=name, **kwargs):
            reached.append(_name)

        monkeypatch.setattr(services, name, spy)
        monkeypatch.setattr(module, name, spy)
    progress = running_job.progress
    result = make_result(running_job.config.key, [100.0, 110.0])
    # What a GPU host sends back, as a request body: its job, a result, progress and a failure.
    message = {
        "job_id": running_job.pk,
        "result": result,
        "progress": {"phase": "measure", "done": 1, "total": 2},
        "error": "the engine crashed",
        "log_tail": "",
    }
    # Not the job's owner and not staff: every route is tried, and none may cancel the job.
    stranger = token_client(django_user_model.objects.create_user(username="mallory"))
    paths = api_paths(
        {
            "pk": [running_job.pk, recorded[0].pk],
            "key": [running_job.config.key],
            "release": [result["engine"]["release"]],
            "unmatched": ["record_result"],
        }
    )
    assert len(paths) >= 20

    for path in paths:
        stranger.get(path)
        stranger.post(path, message, format="json")
        upload = SimpleUploadedFile("result.json", json.dumps(result).encode())
        stranger.post(path, {"file": upload, "hardware": "RTX 4090"}, format="multipart")

    assert reached == []
    running_job.refresh_from_db()
    assert running_job.status == Job.Status.RUNNING and running_job.progress == progress
    assert not Run.objects.filter(job=running_job).exists()
