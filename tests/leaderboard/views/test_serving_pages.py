"""What a serving user weighs, on the pages: /concurrency/ draws throughput per GPU against tok/s
per user (its data embedded for the chart, the same numbers in a table) and lists each level's
latency percentiles and goodput at the objective asked for; a run's and a config's pages show
the latency of each point. A refused upload never reaches a page, and stored requests damaged
outside the services never break one."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard.models import REQUEST_RECORD_FIELDS, RequestRecord, Run
from tests.support.h200_results import CONCURRENCY_LEVELS, load_h200_concurrency
from tests.support.pages import element_text, embedded, text
from tests.support.protocol_results import concurrency_config
from tests.support.protocol_runs import LEVELS, import_streamed

pytestmark = pytest.mark.django_db


@pytest.fixture
def streamed_runs(user, ranked_models, hardware, make_protocol_result):
    mine, _ = import_streamed(user, hardware, make_protocol_result)
    return mine


def concurrency_page(client, hardware, **query) -> str:
    return client.get(
        "/concurrency/", {"target": "tiny-qwen3", "hardware": hardware.slug} | query
    ).content.decode()


def test_the_concurrency_page_embeds_a_curve_per_config_and_tabulates_the_same_points(
    client, streamed_runs, hardware
):
    page = concurrency_page(client, hardware)
    pareto = embedded(page, "pareto-data")
    assert pareto is not None and {curve["baseline"] for curve in pareto["curves"]} == {True, False}
    assert all([p["concurrency"] for p in c["points"]] == LEVELS for c in pareto["curves"])
    assert 'data-chart-source="pareto-data"' in page
    table = element_text(page, "pareto-table")
    for curve in pareto["curves"]:
        for point in curve["points"]:
            assert f"{point['per_gpu']:,.1f}" in table and f"{point['per_user']:,.1f}" in table
    assert "on the frontier" in table
    legend = text(client.get("/concurrency/", {"target": "tiny-qwen3", "hardware": hardware.slug}))
    assert "1000 / the level's median TPOT" in legend and "Pareto frontier" in legend


def test_the_concurrency_page_lists_each_level_s_percentiles_and_goodput_at_the_objective(
    client, streamed_runs, hardware
):
    rows = element_text(concurrency_page(client, hardware), "concurrency-latency-table")
    assert "p50 / p90 / p99" in rows and "not streamed" in rows  # the baseline was not streamed
    level_one = [r for r in streamed_runs if r["concurrency"] == 1]
    assert f"of {len(level_one)}" in rows
    # An objective no request meets: every level's goodput is 0 of its requests.
    strict = element_text(concurrency_page(client, hardware, tpot_ms="0.001"), "latency")
    assert "TPOT ≤ 0 ms" in strict and "0.0% 0 of" in strict
    lenient = element_text(concurrency_page(client, hardware, tpot_ms="100000"), "latency")
    assert "100.0% " in lenient and "0.0% 0 of" not in lenient


@pytest.mark.parametrize("objective", ["abc", "nan", "-1", "0", "inf", "1" * 50, "%00"])
def test_a_nonsense_objective_falls_back_to_the_stated_default(
    client, streamed_runs, hardware, objective
):
    page = client.get(
        f"/concurrency/?target=tiny-qwen3&hardware={hardware.slug}&tpot_ms={objective}"
    )
    assert "TPOT ≤ 50 ms" in text(page)


def test_a_run_page_and_its_config_page_show_each_point_s_latency(client, streamed_runs):
    run = Run.objects.get(config__key=concurrency_config(LEVELS).key)
    for url in (f"/runs/{run.pk}/", f"/configs/{run.config.key}/"):
        shown = element_text(client.get(url).content.decode(), "latency")
        assert shown is not None, url
        assert "all points pooled" in shown and "4 concurrent" in shown
        assert "TPOT ≤ 50 ms" in shown and "not streamed" not in shown


def test_the_h200_concurrency_result_gives_a_pareto_curve_from_its_recorded_clocks(client, user):
    hardware, (_, speculative) = load_h200_concurrency(owner=user)
    target = speculative.config.target_name
    page = client.get("/concurrency/", {"target": target, "hardware": hardware.slug})
    pareto = embedded(page.content.decode(), "pareto-data")
    assert len(pareto["curves"]) == 2
    for curve in pareto["curves"]:
        assert [p["concurrency"] for p in curve["points"]] == CONCURRENCY_LEVELS
        # More requests in flight: each user is served slower.
        per_user = [p["per_user"] for p in curve["points"]]
        assert per_user[0] > per_user[-1]
    # Random weights whose output degenerated: drawn, kept off the ranking, so on no frontier.
    assert all(curve["kept_off"] for curve in pareto["curves"])
    assert pareto["frontier"] == []


def damaged(**fields):
    """A damage to a stored request: its columns where they are columns, else its details."""

    def damage(record: RequestRecord) -> None:
        for name, value in fields.items():
            if name in REQUEST_RECORD_FIELDS:
                setattr(record, name, value)
            else:
                record.details[name] = value

    return damage


@pytest.mark.parametrize(
    "damage",
    [
        damaged(ttft_ms=None, wall_ms=None),
        damaged(chunk_arrival_ms=[3.0, "x", -1.0]),
        damaged(chunk_arrival_ms={"a": 1}, tpot_ms="many"),
        damaged(wall_ms=1e308, ttft_ms=-5.0, tpot_ms="fast"),
        lambda record: record.details.clear(),
    ],
)
def test_damaged_stored_requests_never_break_a_page_or_the_api(client, streamed_runs, damage):
    for record in RequestRecord.objects.all():
        damage(record)
        record.save()
    run = Run.objects.get(config__key=concurrency_config(LEVELS).key)
    urls = (f"/runs/{run.pk}/", f"/configs/{run.config.key}/", "/concurrency/", "/")
    for url in urls:
        assert client.get(url).status_code == 200, url
    for url in (
        f"/api/v1/runs/{run.pk}",
        "/api/v1/concurrency",
        f"/api/v1/configs/{run.config.key}",
    ):
        assert APIClient().get(url).status_code == 200, url
