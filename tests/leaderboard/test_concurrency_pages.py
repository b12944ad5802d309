"""The concurrency protocol on the site: the config page's chart and table, /concurrency/, the
API, its own ranking, submitting it (with field errors) and stored results missing fields."""

from __future__ import annotations

import html
import json
import re

import pytest
from rest_framework.test import APIClient

from leaderboard import selectors, services
from leaderboard.models import Job, LeaderboardEntry, Run
from leaderboard.services.board import mark_test_weights
from tests.support.measured_configs import measure
from tests.support.protocol_results import (
    concurrency_config,
    concurrency_records,
)

LEVELS = [1, 2, 4]
# Aggregate tok/s per level: speculation pays at 1 and 2 concurrent requests, not at 4.
SPECULATIVE = [100.0, 150.0, 160.0]
BASELINE = [60.0, 120.0, 200.0]
SPEEDUPS = [100 / 60, 150 / 120, 160 / 200]


def text(response) -> str:
    assert response.status_code == 200, response.status_code
    return re.sub(r"\s+", " ", html.unescape(response.content.decode()))


def json_data(page: str, element_id: str):
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    return json.loads(found.group(1))


@pytest.fixture
def models(models):
    """Cleared of the test-weights mark, as an admin could: the ranking test needs ranked rows."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


@pytest.fixture
def concurrency_runs(user, models, hardware, make_protocol_result) -> list[Run]:
    """A DFlash config's concurrency result with its paired baseline, imported as a result file."""
    config = concurrency_config(LEVELS)
    result = make_protocol_result(
        config,
        concurrency_records(config, SPECULATIVE, acceptance=0.75),
        concurrency_records(config.baseline(), BASELINE, acceptance=None),
    )
    return services.import_runner_result(
        owner=user, hardware=hardware, result=result, source="test"
    )


def speculative_key() -> str:
    return concurrency_config(LEVELS).key


def test_the_config_page_charts_aggregate_throughput_against_its_baseline_with_the_crossover(
    client, concurrency_runs
):
    page = text(client.get(f"/configs/{speculative_key()}/"))

    chart = json_data(page, "config-concurrency-data")
    assert chart["levels"] == LEVELS and chart["crossover"] == 4
    mine, baseline = chart["lines"]
    assert baseline["baseline"] and not mine["baseline"]
    assert mine["aggregate"] == pytest.approx(SPECULATIVE, rel=1e-3)
    assert baseline["aggregate"] == pytest.approx(BASELINE, rel=1e-3)
    assert 'data-chart-source="config-concurrency-data"' in page
    table = re.search(
        r'<table class="concurrency-table" id="config-concurrency-table">(.*?)</table>', page
    ).group(1)
    rows = re.findall(r"<tr.*?</tr>", table)
    assert len(rows) == 1 + len(LEVELS)
    # Level 4 is the crossover row: its speedup is 160 / 200 and it is marked.
    assert 'class="crossover"' in rows[3] and "0.80×" in rows[3]
    assert "1.67×" in rows[1] and "1.25×" in rows[2]
    # Clearly faster at 2 and clearly slower at 4 over two rounds each: the interval is (2, 4].
    assert "Crossover between 2 and 4 concurrent requests" in page


def test_the_concurrency_view_lists_each_config_of_a_target_with_its_crossover(
    client, concurrency_runs, hardware
):
    page = text(client.get("/concurrency/", {"target": "tiny-qwen3", "hardware": hardware.slug}))

    chart = json_data(page, "concurrency-data")
    assert chart["levels"] == LEVELS
    by_kind = {line["baseline"]: line for line in chart["lines"]}
    assert by_kind[False]["crossover"] == 4 and by_kind[True]["crossover"] is None
    table = re.search(r'<table id="concurrency-table">(.*?)</table>', page).group(1)
    speculative_row = next(r for r in re.findall(r"<tr.*?</tr>", table) if "draft-dflash" in r)
    assert speculative_row.endswith('<td class="num"><strong>between 2 and 4</strong></td> </tr>')
    assert 'href="/concurrency/"' in page  # the site's navigation links it


def test_the_concurrency_view_without_results_says_so(client, db):
    page = text(client.get("/concurrency/", {"target": "nothing", "hardware": "none"}))
    assert "No concurrency results" in page and "concurrency-data" not in page


def test_the_api_gives_the_same_levels_speedups_and_crossover(client, concurrency_runs):
    body = client.get("/api/v1/concurrency").json()

    assert body["target"] == "tiny-qwen3" and body["levels"] == LEVELS
    (line,) = [line for line in body["lines"] if not line["baseline"]]
    assert line["config_key"] == speculative_key() and line["crossover"] == 4
    assert [row["speedup"] for row in line["rows"]] == pytest.approx(SPEEDUPS, rel=1e-3)
    assert line["rows"][0]["n"] == 2 and line["rows"][0]["ci95_low"] is not None
    config = client.get(f"/api/v1/configs/{speculative_key()}").json()
    assert config["crossover_concurrency"] == 4
    assert [row["concurrency"] for row in config["concurrency_levels"]] == LEVELS
    assert config["categories"] is None
    # The existing fields stay.
    assert config["key"] == speculative_key() and config["protocol"] == "concurrency"


def test_a_concurrency_row_ranks_only_among_concurrency_rows(
    concurrency_runs, user, hardware, enqueued, make_result
):
    # A quick row far faster than the concurrency row's pooled decode tok/s.
    measure(user, hardware, make_result, 4, [900.0, 910.0])
    entries = selectors.leaderboard_entries(ranked_only=True)
    page = list(entries)
    ranks = selectors.page_ranks(entries, page, offset=0, ordering="tokens_per_second")
    by_protocol = {}
    for entry in page:
        by_protocol.setdefault(entry.config.protocol, []).append(ranks[entry.pk].rank)
    # Each protocol family's fastest row is rank 1 of its own ranking.
    assert min(by_protocol["concurrency"]) == 1 and min(by_protocol["quick"]) == 1
    speculative = LeaderboardEntry.objects.get(config__key=speculative_key())
    # The row ranks by aggregate tok/s at its lowest level (its rounds the samples), not by
    # per-request decode pooled over levels, and its speedup is that level's ratio.
    assert speculative.tps_definition == "aggregate" and speculative.interval_basis == "rounds"
    assert speculative.tokens_per_second == pytest.approx(SPECULATIVE[0], rel=1e-3)
    assert speculative.speedup == pytest.approx(SPEEDUPS[0], rel=1e-3)
    assert speculative.speedup_basis == "rounds" and speculative.crossover == "between 2 and 4"
    assert speculative.ranking_key != next(
        e.ranking_key for e in page if e.config.protocol == "quick"
    )
    definitions = selectors.row_definitions(speculative, {})
    assert "at its lowest level" in definitions["tokens_per_second"]
    assert "aggregate tok/s over the paired" in definitions["speedup"]


def test_the_board_names_the_concurrency_ranking_beside_its_rank(client, concurrency_runs):
    page = text(client.get("/", {"protocol": "concurrency"}))
    # Named by what it measured: its rows rank only among configs of the same levels and lengths.
    assert 'class="ranking-heading"' in page and "concurrency 1–4 (3 levels), 64 in, 32 out" in page
    assert "crossover between 2 and 4" in page


@pytest.fixture
def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=user)
    return client


def concurrency_submission(hardware, **protocol) -> dict:
    return {
        "hardware": hardware.slug,
        "config": {
            "target_model": "tiny-qwen3.gguf",
            "draft_model": "tiny-dflash.gguf",
            "spec_types": ["draft-dflash"],
            "n_max": 4,
            "protocol": {"name": "concurrency", "input_tokens": 64, "output_tokens": 32} | protocol,
        },
    }


def test_the_api_queues_a_concurrency_config(api, models, hardware, enqueued):
    response = api.post(
        "/api/v1/submissions", concurrency_submission(hardware, levels=[1, 2]), format="json"
    )

    assert response.status_code == 201, response.json()
    job = Job.objects.get(pk=response.json()["id"])
    assert job.config.protocol == "concurrency"
    assert job.config.canonical["protocol"]["levels"] == [1, 2]


@pytest.mark.parametrize(
    ("levels", "fragment"),
    [([1, 128], "slot limit"), ([4, 2], "strictly increasing"), ([], "at least one")],
)
def test_bad_levels_are_a_field_error_in_the_api_and_queue_nothing(
    api, models, hardware, enqueued, levels, fragment
):
    response = api.post(
        "/api/v1/submissions", concurrency_submission(hardware, levels=levels), format="json"
    )

    assert response.status_code == 400
    errors = response.json()["config"]
    (field,) = [name for name in errors if name.startswith("protocol.")]
    assert field.endswith(".levels") and fragment in " ".join(errors[field])
    assert not Job.objects.exists()


def test_the_form_submits_a_concurrency_config_and_shows_bad_levels_inline(
    client, user, models, hardware, enqueued
):
    client.force_login(user)
    form = {
        "hardware": hardware.slug,
        "target_model": "tiny-qwen3.gguf",
        "draft_model": "tiny-dflash.gguf",
        "spec_types": ["draft-dflash"],
        "n_max": "4",
        "protocol": "concurrency",
        "levels": "4, 2",
        "input_tokens": "64",
        "output_tokens": "32",
        "rounds": "2",
        "warmup": "1",
    }
    page = text(client.post("/submit/", form))
    assert "strictly increasing" in page and not Job.objects.exists()
    # The error sits at the levels field, not at the top of the form.
    assert re.search(
        r"strictly increasing.{0,400}name=\"levels\"|name=\"levels\".{0,600}strictly increasing",
        page,
    )

    response = client.post("/submit/", form | {"levels": "1,2"})
    assert response.status_code == 302
    job = Job.objects.get(config__protocol="concurrency", config__spec_label="draft-dflash")
    assert job.config.canonical["protocol"]["levels"] == [1, 2]
    assert job.config.canonical["protocol"]["rounds"] == 2


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.pop("aggregate_tokens_per_second"),
        lambda p: p.update(aggregate_tokens_per_second=None, ttft_ms=None, speedup=None),
        lambda p: p.update(aggregate_tokens_per_second={"n": "two", "mean": "fast"}),
        lambda p: p.update(concurrency=True),
        lambda p: p.update(concurrency=None, acceptance_rate="most"),
    ],
)
def test_stored_points_missing_fields_or_holding_nulls_never_break_a_page(
    client, concurrency_runs, hardware, damage
):
    for run in Run.objects.all():
        for point in run.raw_result["points"]:
            damage(point)
        run.raw_result["summary"]["roofline"] = "not an object"
        run.save(update_fields=["raw_result"])
    key = speculative_key()
    for url in (f"/configs/{key}/", "/concurrency/", "/", f"/runs/{concurrency_runs[-1].pk}/"):
        assert client.get(url).status_code == 200, url
    for url in ("/api/v1/concurrency", f"/api/v1/configs/{key}", "/api/v1/leaderboard"):
        assert client.get(url).status_code == 200, url


def test_the_concurrency_page_ranks_configs_at_the_level_it_is_asked_for(
    client, concurrency_runs, hardware, user, make_protocol_result
):
    # A second DFlash config of the same workload: slower at 1 and 2, faster at 4.
    other = concurrency_config(LEVELS, n_max=2)
    services.import_runner_result(
        owner=user,
        hardware=hardware,
        result=make_protocol_result(
            other,
            concurrency_records(other, [80.0, 130.0, 190.0], acceptance=0.6),
            concurrency_records(other.baseline(), BASELINE, acceptance=None),
        ),
        source="test",
    )
    query = {"target": "tiny-qwen3", "hardware": hardware.slug}

    def ranked(level: int) -> list[str]:
        series = selectors.concurrency_series(
            target_name="tiny-qwen3", hardware_slug=hardware.slug, level=level
        )
        [table] = series["ranking"]
        assert len(table["baselines"]) == 1  # the denominator, not a ranked row
        return [row["line"]["key"] for row in table["rows"]]

    assert ranked(1) == [speculative_key(), other.key]
    assert ranked(4) == [other.key, speculative_key()]
    page = text(client.get("/concurrency/", query | {"level": "4"}))
    assert "Ranked at 4 concurrent" in page and "baseline (the denominator)" in page
