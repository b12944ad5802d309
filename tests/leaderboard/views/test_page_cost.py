"""What a page costs stays bounded whatever was uploaded: the heaviest result the upload limit
lets through (tests.support.heavy_results) shows its requests a hundred at a time, in a bounded
number of queries, and a second visit is served from the page cache (no query but the board's
version) until the board changes; its config page lists its runs a page at a time too. The
downloads keep every request."""

from __future__ import annotations

import re

import pytest

from leaderboard import services
from leaderboard.models import Run
from runner.config import BenchmarkConfig
from tests.support.api_clients import token_client, upload
from tests.support.heavy_results import heaviest_result
from tests.support.measured_configs import measure
from tests.support.pages import text

REQUESTS_SHOWN = 100
QUICK = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 64}}


@pytest.fixture
def heavy_run(user, models, make_protocol_result, settings) -> Run:
    """The heaviest result an upload can carry, uploaded through the API."""
    result = heaviest_result(make_protocol_result, limit_bytes=settings.SPECBOARD_MAX_IMPORT_BYTES)
    response = upload(token_client(user), result, hardware="NVIDIA H200")
    assert response.status_code == 201, response.content
    (row,) = response.json()["runs"]
    return Run.objects.get(pk=row["id"])


def request_indices(page: str) -> list[int]:
    """The request numbers in the run page's requests table, in its order."""
    table = page[page.index('id="requests-table"') :]
    body = table[table.index("<tbody>") : table.index("</tbody>")]
    return [int(number) for number in re.findall(r"<tr><td[^>]*>(\d+)</td>", body)]


def test_the_heaviest_upload_shows_a_hundred_requests_in_a_few_queries_then_from_the_cache(
    client, heavy_run, django_assert_max_num_queries
):
    requests = heavy_run.requests.count()
    assert requests > 6000

    with django_assert_max_num_queries(15):
        first = client.get(f"/runs/{heavy_run.pk}/")
    assert request_indices(first.content.decode()) == list(range(REQUESTS_SHOWN))
    assert f"{requests:,} measured" in text(first)
    # At most the board's version, which a process reads once a second.
    with django_assert_max_num_queries(1):
        again = client.get(f"/runs/{heavy_run.pk}/")
    assert again.content == first.content

    pages = -(-requests // REQUESTS_SHOWN)
    last = client.get(f"/runs/{heavy_run.pk}/", {"requests_page": pages}).content.decode()
    assert request_indices(last) == list(range((pages - 1) * REQUESTS_SHOWN, requests))
    for beyond in (str(pages + 1), "9" * 18):
        page = client.get(f"/runs/{heavy_run.pk}/", {"requests_page": beyond}).content.decode()
        assert request_indices(page) == request_indices(last)
    for odd in ("²", "-1", "x", "", "9" * 30):
        page = client.get(f"/runs/{heavy_run.pk}/", {"requests_page": odd}).content.decode()
        assert request_indices(page) == list(range(REQUESTS_SHOWN))


def test_the_heaviest_uploads_downloads_keep_every_request(client, heavy_run):
    requests = heavy_run.requests.count()
    csv_lines = client.get(f"/runs/{heavy_run.pk}/requests.csv").content.decode().splitlines()
    assert len(csv_lines) == 1 + requests
    body = client.get(f"/runs/{heavy_run.pk}/requests.json").json()
    assert [record["index"] for record in body["requests"]] == list(range(requests))


def test_the_heaviest_uploads_config_page_costs_a_bounded_number_of_queries(
    client, heavy_run, django_assert_max_num_queries
):
    with django_assert_max_num_queries(30):
        page = client.get(f"/configs/{heavy_run.config.key}/")
    assert page.status_code == 200 and b"acceptance-spread-data" in page.content
    # At most the board's version, which a process reads once a second.
    with django_assert_max_num_queries(1):
        again = client.get(f"/configs/{heavy_run.config.key}/")
    assert again.content == page.content


def test_a_cached_config_page_offers_to_run_it_again_once_its_model_is_registered(
    client, user, db, make_result
):
    # A result measured elsewhere: its model is known from its provenance, not registered here.
    (run,) = services.import_runner_result(
        owner=user,
        hardware=services.register_hardware(gpu_name="NVIDIA H200"),
        result=make_result(BenchmarkConfig.model_validate(QUICK), [100.0, 104.0]),
        source="test",
    )
    assert "Run this again" not in text(client.get(f"/configs/{run.config.key}/"))

    services.register_model(path="tiny-qwen3.gguf", name="tiny-qwen3-here")
    assert "Run this again" in text(client.get(f"/configs/{run.config.key}/"))


def test_a_cached_run_page_changes_with_the_board(
    client, user, ranked_models, hardware, enqueued, make_result
):
    run = measure(user, hardware, make_result, 4, [100.0, 104.0], release="b11000").run
    assert ">stale</span>" not in text(client.get(f"/runs/{run.pk}/"))

    # A newer release measured: this run's is stale, and its page says so at once.
    measure(user, hardware, make_result, 5, [90.0, 94.0], release="b11434")
    assert ">stale</span>" in text(client.get(f"/runs/{run.pk}/"))

    # Its row edited outside the services: shown once the board's version is raised, as the
    # services raise it with every change of a run.
    Run.objects.filter(pk=run.pk).update(peak_memory_bytes=300 * 2**20, memory_kind="process")
    services.raise_board_version()
    assert "300.0 MiB process memory" in text(client.get(f"/runs/{run.pk}/"))
    Run.objects.filter(pk=run.pk).delete()
    services.raise_board_version()
    assert client.get(f"/runs/{run.pk}/").status_code == 404


def test_a_config_page_lists_its_runs_a_hundred_at_a_time(
    client, user, ranked_models, hardware, enqueued, make_result
):
    job = measure(user, hardware, make_result, 4, [100.0, 104.0])
    # 249 more batches of the same config: the page reads their rows, however they came.
    copies = [
        Run(**{field.attname: getattr(job.run, field.attname) for field in Run._meta.fields})
        for _ in range(249)
    ]
    for copy in copies:
        copy.pk = copy.job_id = copy.import_fingerprint = None
    Run.objects.bulk_create(copies)
    runs = list(Run.objects.filter(config=job.config).order_by("created_at", "id"))
    assert len(runs) == 250

    def linked(query: dict) -> list[int]:
        page = client.get(f"/configs/{job.config.key}/", query).content.decode()
        table = page[page.index('id="runs-table"') :]
        return [int(pk) for pk in re.findall(r'<a href="/runs/(\d+)/">run \d+</a>', table)]

    assert linked({}) == [run.pk for run in runs[:100]]
    assert linked({"runs_page": "3"}) == [run.pk for run in runs[200:]]
    assert linked({"runs_page": "7"}) == linked({"runs_page": "3"})
    assert linked({"runs_page": "³"}) == linked({})


def test_the_heaviest_runs_downloads_and_api_detail_are_rendered_once_then_kept(client, heavy_run):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    downloads = [
        f"/runs/{heavy_run.pk}/requests.csv",
        f"/runs/{heavy_run.pk}/requests.json",
        f"/api/v1/exports/runs/{heavy_run.pk}/requests.csv",
        f"/api/v1/exports/runs/{heavy_run.pk}/requests.json",
        f"/api/v1/runs/{heavy_run.pk}",
    ]
    first = {url: client.get(url) for url in downloads}
    for url in downloads:
        with CaptureQueriesContext(connection) as queries:
            again = client.get(url)
        assert again.status_code == 200 and again.content == first[url].content, url
        assert again["Content-Type"] == first[url]["Content-Type"], url
        # One small read of the run at most: neither its records nor its stored result.
        assert len(queries) <= 1, (url, [query["sql"][:80] for query in queries])
        assert not any("requestrecord" in query["sql"].lower() for query in queries), url
    assert len(first[downloads[-1]].json()["requests"]) == heavy_run.requests.count()


def test_a_runs_kept_api_detail_shows_what_pairing_sets_on_it_later(client, heavy_run):
    url = f"/api/v1/runs/{heavy_run.pk}"
    before = client.get(url).json()["lossless"]
    Run.objects.filter(pk=heavy_run.pk).update(lossless=not before)
    assert client.get(url).json()["lossless"] is (not before)
