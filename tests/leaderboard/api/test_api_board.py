"""GET /api/v1/leaderboard and its exports: the page's main ranking unless a query asks for
more, a bad query is a 400, the page cache is keyed on the validated query alone, the CSV
export's cells cannot be formulas, and each row carries every number's definition, its n and its
interval, as the board shows them one hover away (a categories row's speedup is across its
categories)."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.core.cache import cache, caches
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.models import LeaderboardEntry
from tests.support.api_clients import SPECULATIVE, honest_result, upload
from tests.support.baselines import with_baseline_section
from tests.support.measured_configs import measure
from tests.support.protocol_runs import categories_result_file

SYNTHETIC = SPECULATIVE | {"spec_synth_len": 6}


def ranked_labels(page: str) -> list[str]:
    ranking = re.search(r'<table class="board" id="ranking">(.*?)</table>', page, re.S)
    return (
        re.findall(r'<a href="/configs/[0-9a-f]+/">([^<]+)</a>', ranking.group(1))
        if ranking
        else []
    )


def api_labels(api: APIClient, query: dict | None = None) -> list[str]:
    return [row["label"] for row in api.get("/api/v1/leaderboard", query or {}).json()["results"]]


def cached_entries() -> int:
    # The test settings' per-process caches (LocMemCache): the shared one and the pages'.
    return len(cache._cache) + len(caches["pages"]._cache)


def test_the_api_leaderboard_defaults_to_the_pages_main_ranking(
    user, signed_in, anonymous, models, hardware, enqueued, make_result
):
    for data, decode in ((SPECULATIVE, [200.0, 204.0]), (SYNTHETIC, [900.0, 904.0])):
        job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
        result = make_result(job.config.key, decode)
        if not job.config.synthetic:
            # It measures its paired baseline beside itself; the synthetic job pairs with that.
            baseline = make_result(job.config.baseline.key, [50.0, 52.0])
            result = with_baseline_section(result, baseline)
        services.record_result(job_id=job.pk, result=result)
    assert upload(signed_in, honest_result(make_result, [385.0, 395.0])).status_code == 201
    synthetic = LeaderboardEntry.objects.get(synthetic=True).config.label
    uploaded = LeaderboardEntry.objects.get(self_reported=True).config.label

    default = api_labels(anonymous)
    page = ranked_labels(Client().get("/").content.decode())

    assert default == page
    assert synthetic not in default and uploaded not in default
    widened = api_labels(anonymous, {"source": "all"})
    assert synthetic in widened and uploaded in widened and set(default) < set(widened)
    assert set(widened) == set(ranked_labels(Client().get("/", {"all": "1"}).content.decode()))
    assert api_labels(anonymous, {"source": "self-reported"}) == [uploaded]
    assert synthetic in api_labels(anonymous, {"source": "measured"})
    # The downloads take the same query, so they default to the ranking too.
    exported = anonymous.get("/api/v1/exports/leaderboard.json").json()
    assert [row["label"] for row in exported] == default


def test_a_bad_leaderboard_ordering_is_400(anonymous, db):
    assert anonymous.get("/api/v1/leaderboard", {"ordering": "bogus"}).status_code == 400


def test_junk_queries_add_nothing_to_the_cache_and_a_real_query_is_cached_once(db):
    api = APIClient()
    assert api.get("/api/v1/leaderboard").status_code == 200
    assert api.get("/api/v1/leaderboard", {"ordering": "tau"}).status_code == 200
    # One uncached answer fills the board's shared reads (filter choices, newest release) once.
    assert api.get("/api/v1/leaderboard", {"target": "warm-up"}).status_code == 200
    settled = cached_entries()

    for index in range(200):
        assert api.get("/api/v1/leaderboard", {f"junk{index}": "x"}).status_code == 200
        assert api.get("/api/v1/leaderboard", {"target": f"no-such-{index}"}).status_code == 200
        assert api.get("/api/v1/leaderboard", {"search": f"term {index}"}).status_code == 200
        assert api.get("/api/v1/leaderboard", {"page": f"0{index}x"}).status_code == 404
        assert api.get("/api/v1/leaderboard", {"ordering": f"bad{index}"}).status_code == 400
    assert cached_entries() == settled

    # The same valid query however it is spelled is one entry.
    api.get("/api/v1/leaderboard", {"ordering": "tau", "page": "1"})
    api.get("/api/v1/leaderboard", {"ordering": "tau", "page": "01"})
    assert cached_entries() <= settled + 1


def test_exports_neutralise_formula_cells(signed_in, anonymous):
    rows = [
        {"run_name": '=HYPERLINK("http://evil")', "avg_tps": "70"},
        {"run_name": "+cmd-dflash", "avg_tps": "150"},
        {"run_name": "@SUM(A1)-mtp", "avg_tps": "120"},
    ]
    header = services.SEED_CSV_COLUMNS
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header)
    writer.writeheader()
    for row in rows:
        writer.writerow({c: "" for c in header} | {"runs": "1"} | row)
    body = {
        "file": SimpleUploadedFile("runs.csv", buffer.getvalue().encode()),
        "hardware": "-RTX 3090",
        "baseline_run_name": rows[0]["run_name"],
    }
    assert signed_in.post("/api/v1/imports", body, format="multipart").status_code == 201

    # Imported rows are self-reported: the exports, like the list, give them when asked.
    exported = anonymous.get("/api/v1/exports/leaderboard.csv", {"source": "all"})

    assert exported.status_code == 200 and exported["Content-Type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert {row["label"] for row in table} == {
        '\'=HYPERLINK("http://evil")',
        "'+cmd-dflash",
        "'@SUM(A1)-mtp",
    }
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in table for cell in row.values())
    as_json = anonymous.get("/api/v1/exports/leaderboard.json", {"source": "all"}).json()
    assert {row["label"] for row in as_json} == {row["run_name"] for row in rows}


# A row's definitions --------------------------------------------------------------------------


@pytest.fixture
def categories_result(make_protocol_result) -> dict:
    """A DFlash config's categories result with its paired baseline, as a runner file."""
    return categories_result_file(make_protocol_result)


def test_a_categories_row_says_its_speedup_is_across_categories(
    user, models, hardware, categories_result
):
    services.import_runner_result(
        owner=user, hardware=hardware, result=categories_result, source="test"
    )
    response = APIClient().get("/api/v1/leaderboard", {"protocol": "categories", "source": "all"})
    assert response.status_code == 200
    (row,) = [r for r in response.json()["results"] if r["speedup"] is not None]
    sentence = row["definitions"]["speedup"]
    assert "geometric mean" in sentence and "categor" in sentence
    # The pooled tok/s of the two rows is not what this speedup divides.
    assert " over 100.00 tok/s" not in sentence


@pytest.fixture
def measured(user, ranked_models, hardware, enqueued, make_result):
    return measure(user, hardware, make_result, 4, [100.0, 104.0])


def test_the_api_row_carries_each_numbers_definition_n_and_interval(client, measured):
    entry = LeaderboardEntry.objects.get(config=measured.config)
    (row,) = [
        r
        for r in client.get("/api/v1/leaderboard").json()["results"]
        if r["config_key"] == entry.config.key
    ]

    assert set(row["definitions"]) == {
        "tokens_per_second", "ci95", "n", "speedup", "acceptance_rate", "tau", "runs_count",
        "joules_per_token", "roofline",
    }  # fmt: skip
    assert row["definitions"]["joules_per_token"].startswith("J/token: NVML's energy counter")
    assert row["definitions"]["roofline"].startswith("roofline: mean decode tok/s over the")
    assert row["definitions"]["acceptance_rate"].startswith("acceptance: draft tokens accepted")
    assert row["definitions"]["tau"].startswith("tau: 1 + accepted draft tokens per verify step")
    assert row["acceptance_draft_tokens"] == entry.best_run.draft_tokens
    assert row["acceptance_accepted_tokens"] == entry.best_run.draft_accepted
    assert row["tau_verify_steps"] == entry.best_run.verify_steps
    assert row["ci95_scope"] == "requests" and row["n"] == 2
    assert row["baseline_tokens_per_second"] == entry.baseline_entry.tokens_per_second
    assert row["depths"] == []


@pytest.mark.parametrize(
    "query",
    [
        {"ordering": "-id; DROP TABLE leaderboard_run"},
        {"protocol": "<script>"},
        {"include_retired": "maybe"},
        {"target": "x" * 5000},
        {"target": "a\x00b"},
    ],
)
def test_bad_leaderboard_queries_are_400(signed_in, db, query):
    response = signed_in.get("/api/v1/leaderboard", query)
    assert response.status_code == 400 and response.json()


@pytest.mark.parametrize(
    "export", ["/api/v1/exports/leaderboard.csv", "/api/v1/exports/leaderboard.json"]
)
def test_an_export_reads_its_rows_relations_with_them_not_row_by_row(db, export):
    """An export of up to 10,000 rows reads the same queries for 2 rows as for 8: each row's
    paired baseline and that baseline's config (baseline_config_key) come with it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from leaderboard.models import Hardware
    from tests.support.board_rows import board_row

    kind = Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")
    client = Client()
    counts, shown = [], []
    for batch in range(2):
        baseline = board_row(kind, f"baseline {batch}", 50.0, spec_label="none")
        for index in range(1 + 5 * batch):
            row = board_row(kind, f"draft {batch}.{index}", 100.0 + index)
            LeaderboardEntry.objects.filter(pk=row.pk).update(baseline_entry=baseline)
        with CaptureQueriesContext(connection) as read:
            response = client.get(export, {"include_retired": "true"})
        assert response.status_code == 200
        counts.append(len(read.captured_queries))
        shown.append(response.content.decode().count(baseline.config.key))
    assert counts[0] == counts[1], counts
    assert shown[1] >= 6  # the rows' baseline_config_key (and the baseline's own key)


def test_a_page_answered_uncached_for_junk_parameters_counts_its_rows_once(
    db, user, hardware, make_result, ranked_models
):
    """Unknown parameters or an odd page number leave a page uncached, but its count is the
    validated query's, kept per row set: a stranger varying junk parameters cannot make the
    site count every row (a second at 10M runs) on each request. Free text still counts."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    measure(user, hardware, make_result, 4, [100.0, 104.0])
    api = APIClient()
    first = api.get("/api/v1/leaderboard").json()
    for index, query in enumerate([{"junk": "1"}, {"junk": "2", "page": "01"}, {"x": "y"}]):
        with CaptureQueriesContext(connection) as read:
            answer = api.get("/api/v1/leaderboard", query)
        assert answer.status_code == 200, index
        assert answer.json()["count"] == first["count"] >= 1
        assert not [q for q in read.captured_queries if "COUNT(" in q["sql"]], index
    with CaptureQueriesContext(connection) as read:
        assert api.get("/api/v1/leaderboard", {"search": "n_max"}).status_code == 200
    assert [q for q in read.captured_queries if "COUNT(" in q["sql"]]


def test_the_lists_kept_pages_are_keyed_by_every_filter_of_its_query():
    from leaderboard.api.serializers import LeaderboardQuerySerializer
    from leaderboard.api.views.board import QUERY_FIELDS

    assert set(LeaderboardQuerySerializer().fields) == QUERY_FIELDS
