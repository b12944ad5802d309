"""GET /api/v1/concurrency gives each level's latency percentiles and goodput at the objective
asked for (?tpot_ms=) and the throughput-per-GPU against tok/s-per-user curves (`pareto`), beside
the fields it always had; a run's detail gives its latency per point. A nonsense objective is a
400 that says why."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.models import Run
from leaderboard.selectors.answers.serving import POOLED_LABEL
from tests.support.api_clients import upload
from tests.support.protocol_results import concurrency_config, concurrency_records
from tests.support.protocol_runs import (
    CONCURRENCY_BASELINE,
    CONCURRENCY_SPECULATIVE,
    LEVELS,
    import_streamed,
    streamed,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def streamed_runs(user, ranked_models, hardware, make_protocol_result):
    mine, _ = import_streamed(user, hardware, make_protocol_result)
    return mine


def test_each_level_carries_its_latency_and_the_body_its_pareto_curves(streamed_runs):
    body = APIClient().get("/api/v1/concurrency").json()
    # The fields it always had stay.
    assert {"target", "hardware", "levels", "lines"} <= set(body) and body["levels"] == LEVELS
    assert body["tpot_ms_objective"] == 50.0 and "tpot_ms" in body["latency_definitions"]
    line = next(line for line in body["lines"] if not line["baseline"])
    for row in line["rows"]:
        latency = row["latency"]
        assert {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "goodput"} == set(latency)
        assert {"n", "mean", "p50", "p90", "p99", "max"} <= set(latency["tpot_ms"])
        assert latency["tpot_ms"]["p50"] <= latency["tpot_ms"]["p99"]
        assert latency["itl_ms"]["n"] > 0 and row["aggregate"] is not None
    curves = {curve["config_key"]: curve for curve in body["pareto"]["curves"]}
    point = curves[line["config_key"]]["points"][0]
    assert point["per_user"] == pytest.approx(1000.0 / line["rows"][0]["latency"]["tpot_ms"]["p50"])
    assert point["per_gpu"] == pytest.approx(line["rows"][0]["aggregate"])
    assert body["pareto"]["frontier"] and "per_user" in body["pareto"]["definitions"]


def test_the_objective_asked_for_judges_the_goodput(streamed_runs):
    strict = APIClient().get("/api/v1/concurrency", {"tpot_ms": "0.001"}).json()
    lenient = APIClient().get("/api/v1/concurrency", {"tpot_ms": "100000"}).json()
    for body, met in (
        (strict, lambda g: g["met"] == 0),
        (lenient, lambda g: g["met"] == g["requests"]),
    ):
        for line in body["lines"]:
            for row in line["rows"]:
                goodput = row["latency"]["goodput"]
                assert goodput["tpot_ms_objective"] == body["tpot_ms_objective"]
                assert met(goodput) and goodput["requests"] > 0


@pytest.mark.parametrize("objective", ["abc", "nan", "inf", "-1", "0", "1e300"])
def test_a_nonsense_objective_is_refused_naming_the_parameter(streamed_runs, objective):
    response = APIClient().get("/api/v1/concurrency", {"tpot_ms": objective})
    assert response.status_code == 400
    assert "tpot_ms" in response.json()


def test_a_run_s_detail_gives_its_latency_per_point(streamed_runs):
    run = Run.objects.get(config__key=concurrency_config(LEVELS).key)
    body = APIClient().get(f"/api/v1/runs/{run.pk}").json()
    latency = body["latency"]
    assert [row["label"] for row in latency["rows"]][1:] == [f"{n} concurrent" for n in LEVELS]
    assert latency["streamed"] is True and latency["objective_ms"] == 50.0
    assert latency["rows"][0]["latency"]["tpot_ms"]["n"] == len(streamed_runs)
    # The fields it always had stay.
    assert body["id"] == run.pk and "requests" in body and "acceptance_spread" in body


def test_the_openapi_schema_describes_the_new_fields(client):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "tpot_ms_objective" in schema and "per_user" in schema and "itl_ms" in schema


def streamed_result_file(make_protocol_result) -> dict:
    """A streamed concurrency result with its paired baseline, as a runner file (not stored)."""
    config = concurrency_config(LEVELS)
    mine = streamed(concurrency_records(config, CONCURRENCY_SPECULATIVE, acceptance=0.75))
    theirs = concurrency_records(config.baseline(), CONCURRENCY_BASELINE, acceptance=None)
    return make_protocol_result(config, mine, theirs)


def test_an_uploaded_streamed_result_shows_its_latency_on_every_page_of_it(
    signed_in, anonymous, ranked_models, make_protocol_result
):
    response = upload(signed_in, streamed_result_file(make_protocol_result))
    assert response.status_code == 201, response.json()
    (run,) = [
        run
        for run in Run.objects.all()
        if run.raw_result["config_key"] == concurrency_config(LEVELS).key
    ]
    assert run.raw_result["points"][0]["latency"]["itl_ms"]["n"] > 0
    for url in (f"/runs/{run.pk}/", f"/configs/{run.config.key}/", "/concurrency/", "/"):
        page = Client().get(url)
        assert page.status_code == 200, url
    assert "TPOT ≤ 50 ms" in Client().get(f"/runs/{run.pk}/").content.decode()
    assert anonymous.get(f"/api/v1/runs/{run.pk}").json()["latency"]["streamed"] is True


HOSTILE_LATENCY = [
    ("NaN", lambda r: r["requests"][0].update(tpot_ms="__NAN__")),
    ('requests.0.tpot_ms', lambda r: r["requests"][0].update(tpot_ms=-3.0)),
    ('requests.0.chunk_arrival_ms', lambda r: r["requests"][0]["chunk_arrival_ms"].append(1e300)),
    ('requests.0.chunk_arrival_ms', lambda r: r["requests"][0]["chunk_arrival_ms"].insert(0, -1.0)),
    ("points.0.latency.tpot_ms.p99", lambda r: r["points"][0]["latency"]["tpot_ms"].update(
        p99=r["points"][0]["latency"]["tpot_ms"]["p90"])),
    ("points.1.latency.e2e_ms.max", lambda r: r["points"][1]["latency"]["e2e_ms"].update(max=1e300)),
    ("points.2.latency.goodput", lambda r: r["points"][2]["latency"]["goodput"].update(
        tpot_ms_objective=0.001)),
]  # fmt: skip


@pytest.mark.parametrize(("named", "change"), HOSTILE_LATENCY)
def test_an_upload_with_hostile_or_contradicted_latency_is_400_naming_the_field(
    signed_in, ranked_models, make_protocol_result, named, change
):
    result = streamed_result_file(make_protocol_result)
    change(result)
    content = json.dumps(result).replace('"__NAN__"', "NaN").encode()
    response = upload(signed_in, content)
    assert response.status_code == 400
    found = response.json()["file"]
    # A field's messages, or (for a file that is not strict JSON: NaN) the file's own.
    messages = [m for ms in found.values() for m in ms] if isinstance(found, dict) else found
    errors = " ".join(messages)
    assert named in errors or (named == "NaN" and "NaN" in errors), errors
    assert "\n" not in errors and not Run.objects.exists()


def test_a_config_s_detail_gives_its_best_run_s_latency_beside_its_old_fields(streamed_runs):
    body = APIClient().get(f"/api/v1/configs/{concurrency_config(LEVELS).key}").json()
    assert body["latency"]["rows"][0]["label"] == POOLED_LABEL
    assert body["latency"]["rows"][0]["latency"]["tpot_ms"]["n"] == len(streamed_runs)
    assert body["concurrency_levels"][0]["latency"]["goodput"]["tpot_ms_objective"] == 50.0
    assert body["key"] == concurrency_config(LEVELS).key and body["crossover_concurrency"] == 4
