"""The concurrency and categories protocols' own pages: /concurrency/ lists each config of a target
with its crossover and ranks them at the level asked for; /categories/ colours each config and
category by acceptance and speedup; both say so without results, and damaged stored points
never break them (nor the other pages and the API reading the same rows)."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from leaderboard import selectors, services
from leaderboard.models import LeaderboardEntry, Run
from leaderboard.stored_results import stored_requests
from tests.support.h200_results import CONCURRENCY_LEVELS, load_h200_concurrency
from tests.support.pages import embedded, text
from tests.support.protocol_results import (
    categories_config,
    category_records,
    concurrency_config,
    concurrency_records,
)
from tests.support.protocol_runs import (
    CATEGORIES,
    CATEGORY_ACCEPTANCE,
    CATEGORY_BASELINE,
    CATEGORY_DECODE,
    CONCURRENCY_BASELINE,
    LEVELS,
    concurrency_key,
    import_result,
)

# /concurrency/ ------------------------------------------------------------------------------------


def test_the_concurrency_view_lists_each_config_of_a_target_with_its_crossover(
    client, concurrency_runs, hardware
):
    page = text(client.get("/concurrency/", {"target": "tiny-qwen3", "hardware": hardware.slug}))

    chart = embedded(page, "concurrency-data")
    assert chart["levels"] == LEVELS
    by_kind = {line["baseline"]: line for line in chart["lines"]}
    assert by_kind[False]["crossover"] == 4 and by_kind[True]["crossover"] is None
    table = re.search(r'<table id="concurrency-table">(.*?)</table>', page).group(1)
    speculative_row = next(r for r in re.findall(r"<tr.*?</tr>", table) if "draft-dflash" in r)
    # Its last column, the crossover, names the interval between two levels.
    cells = re.findall(r"<td[^>]*>(.*?)</td>", speculative_row)
    assert re.sub(r"<[^>]+>", "", cells[-1]).strip() == "between 2 and 4"
    assert 'href="/concurrency/"' in page  # the site's navigation links it


def test_the_concurrency_view_without_results_says_so(client, db):
    page = text(client.get("/concurrency/", {"target": "nothing", "hardware": "none"}))
    assert "No concurrency results" in page and "concurrency-data" not in page


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
            concurrency_records(other.baseline(), CONCURRENCY_BASELINE, acceptance=None),
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

    assert ranked(1) == [concurrency_key(), other.key]
    assert ranked(4) == [other.key, concurrency_key()]
    page = text(client.get("/concurrency/", query | {"level": "4"}))
    assert "Ranked at 4 concurrent" in page and "baseline (the denominator)" in page


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
    key = concurrency_key()
    for url in (f"/configs/{key}/", "/concurrency/", "/", f"/runs/{concurrency_runs[-1].pk}/"):
        assert client.get(url).status_code == 200, url
    for url in ("/api/v1/concurrency", f"/api/v1/configs/{key}", "/api/v1/leaderboard"):
        assert client.get(url).status_code == 200, url


# /categories/ -------------------------------------------------------------------------------------


def test_the_heatmap_colours_each_config_and_category_by_acceptance_and_speedup(
    client, category_runs, hardware, user, make_protocol_result
):
    # A second speculative config of the same target: n-gram, accepted less on every category.
    ngram = categories_config(CATEGORIES, draft_model=None, spec_types=["ngram-mod"], n_max=None)
    import_result(
        user,
        hardware,
        make_protocol_result(
            ngram,
            category_records(ngram, {n: 95.0 for n in CATEGORIES}, {n: 0.05 for n in CATEGORIES}),
            category_records(ngram.baseline(), CATEGORY_BASELINE, None),
        ),
    )
    page = text(client.get("/categories/", {"target": "tiny-qwen3", "hardware": hardware.slug}))

    heatmap = re.search(r'<table id="category-heatmap" class="heatmap">(.*?)</table>', page)
    head, *rows = re.findall(r"<tr>.*?</tr>", heatmap.group(1))
    assert [re.sub("<.*?>", "", h) for h in re.findall(r"<th.*?</th>", head)][1:] == CATEGORIES
    assert len(rows) == 2
    dflash = next(row for row in rows if "draft-dflash" in row)
    ngram_row = next(row for row in rows if "ngram-mod" in row)
    # Code: 90% accepted (the darkest band but one), 1.80× (a clear gain).
    assert 'class="heat acceptance heat-9">90%' in dflash
    assert 'class="heat speedup gain-4">1.80×' in dflash
    assert 'class="heat speedup loss-1">0.90×' in dflash
    assert 'class="heat acceptance heat-0">5%' in ngram_row
    assert 'class="heat speedup loss-1">0.95×' in ngram_row
    assert 'href="/categories/"' in page


def test_the_categories_view_without_results_says_so(client, db):
    assert "No categories results" in text(client.get("/categories/"))


def test_a_category_with_nothing_drafted_reads_as_measured_not_missing(
    client, user, models, hardware, make_protocol_result
):
    config = categories_config(CATEGORIES)
    records = category_records(config, CATEGORY_DECODE, CATEGORY_ACCEPTANCE)
    for record in records:
        if record["category"] == "math":  # the n-gram type found nothing to draft from
            record.update(draft_n=0, draft_n_accepted=0, verify_steps=0, tau=None)
    result = make_protocol_result(
        config, records, category_records(config.baseline(), CATEGORY_BASELINE, None)
    )
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    page = html.unescape(client.get("/categories/", {"target": "tiny-qwen3"}).content.decode())
    assert "math: acceptance none (nothing drafted), speedup 1.20×" in page
    assert '"–": nothing drafted in that category' in page


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.pop("category"),
        lambda p: p.update(decode_tokens_per_second=None, acceptance_rate=None, tau=None),
        lambda p: p.update(category=["code"], decode_tokens_per_second="fast"),
        lambda p: p.update(acceptance_rate="9", tau=[1]),
    ],
)
def test_damaged_category_points_never_break_a_page(client, category_runs, hardware, damage):
    for run in Run.objects.all():
        for point in run.raw_result["points"]:
            damage(point)
        run.raw_result["summary"]["joules_per_token"] = "lots"
        run.save(update_fields=["raw_result"])
    key = categories_config(CATEGORIES).key
    for url in (f"/configs/{key}/", "/categories/", "/", "/?all=1"):
        assert client.get(url).status_code == 200, url
    for url in (f"/api/v1/configs/{key}", "/api/v1/leaderboard?source=all"):
        assert APIClient().get(url).status_code == 200, url


# The H200's concurrency result ----------------------------------------------------------------


def test_a_first_suite_result_still_loads_renders_and_keeps_apart_from_the_current_suite(
    client, category_runs, hardware, user, make_protocol_result
):
    # A result measured on suite 1 names no suite in its config, as every such file does.
    first = categories_config(CATEGORIES, protocol={
        "name": "categories", "suite": "1", "categories": CATEGORIES,
        "output_tokens": 32, "prompts_per_category": 2,
    })  # fmt: skip
    result = make_protocol_result(
        first,
        category_records(first, CATEGORY_DECODE, CATEGORY_ACCEPTANCE),
        category_records(first.baseline(), CATEGORY_BASELINE, None),
    )
    assert "suite" not in result["config"]["protocol"]
    runs = import_result(user, hardware, result)
    assert first.key in {run.config.key for run in runs}
    current = categories_config(CATEGORIES)
    assert current.key != first.key

    page = text(client.get("/categories/", {"target": "tiny-qwen3", "hardware": hardware.slug}))
    heatmap = re.search(r'<table id="category-heatmap" class="heatmap">(.*?)</table>', page)
    rows = re.findall(r"<tr>.*?</tr>", heatmap.group(1))[1:]
    assert sorted(re.search(r"suite (\d)", row).group(1) for row in rows) == ["1", "2"]
    detail = text(client.get(f"/configs/{first.key}/"))
    table = detail.split('id="config-category-table"')[1].split("</table>")[0]
    assert [name in table for name in CATEGORIES] == [True] * 3
    entries = {
        e.config.key: e for e in LeaderboardEntry.objects.filter(config__protocol="categories")
    }
    assert entries[first.key].ranking_key != entries[current.key].ranking_key
    assert "suite 2" in entries[current.key].workload_label
    assert "suite" not in entries[first.key].workload_label


@pytest.fixture
def h200_concurrency(user, db):
    """The H200's concurrency result (docs/gpu-results/h200-run4): (its hardware kind, [the
    baseline run, the speculative run])."""
    return load_h200_concurrency(owner=user)


def test_the_concurrency_page_and_api_show_the_measured_crossover(h200_concurrency, client: Client):
    hardware, (_, speculative) = h200_concurrency
    target = speculative.config.target_name
    page = client.get("/concurrency/", {"target": target, "hardware": hardware.slug})
    assert page.status_code == 200
    text = page.content.decode()
    # The runner's point estimate is 4, but its three rounds there cannot tell (Welch p = 0.38).
    assert "between 2 and 8" in text

    api = client.get("/api/v1/concurrency", {"target": target, "hardware": hardware.slug}).json()
    line = next(line for line in api["lines"] if not line["baseline"])
    assert line["crossover"] == 4 and line["crossover_text"] == "between 2 and 8"
    assert [row["verdict"] for row in line["rows"]][2] == "not established"
    assert [row["concurrency"] for row in line["rows"]] == CONCURRENCY_LEVELS
    speedups = [row["speedup"] for row in line["rows"]]
    assert speedups[0] == pytest.approx(1.661, abs=1e-3) and speedups[-1] < 1


def test_every_level_shows_its_tau_and_acceptance_derived_from_the_requests(
    h200_concurrency, client: Client
):
    hardware, (_, speculative) = h200_concurrency
    stored = Run.objects.get(pk=speculative.pk).raw_result
    requests = stored_requests([speculative.pk], phase="measure")[speculative.pk]
    # The runner leaves every request's own tau null above level 1 (a wave's verify steps are
    # shared out): the level's figure is derived from the counts.
    assert {r["concurrency"] for r in requests if r["tau"] is None} == {2, 4, 8, 16}
    expected = {}
    for level in CONCURRENCY_LEVELS:
        mine = [r for r in requests if r["concurrency"] == level]
        steps = sum(r["verify_steps"] for r in mine)
        expected[level] = 1 + sum(sum(r["accepted_per_position"]) for r in mine) / steps
    # A point's stored tau is a claim: changed behind the door's back, the page does not show it.
    for point in stored["points"]:
        point["tau"] = 9.99
    Run.objects.filter(pk=speculative.pk).update(raw_result=stored)

    target = speculative.config.target_name
    api = client.get("/api/v1/concurrency", {"target": target, "hardware": hardware.slug}).json()
    line = next(line for line in api["lines"] if not line["baseline"])
    for row in line["rows"]:
        assert row["tau"] == pytest.approx(expected[row["concurrency"]])
        assert 0 < row["acceptance"] < 1 and row["drafting_rounds"] == 3
        assert row["tau_ci95_low"] <= row["tau"] <= row["tau_ci95_high"]
    page = text(client.get("/concurrency/", {"target": target, "hardware": hardware.slug}))
    assert page.count(f"τ {expected[16]:.2f}") == len(CONCURRENCY_LEVELS)
    assert "9.99" not in page
    config_page = text(client.get(f"/configs/{speculative.config.key}/"))
    table = config_page.split('id="config-concurrency-table"')[1].split("</table>")[0]
    assert "9.99" not in table
    assert [f"{expected[level]:.2f}" in table for level in CONCURRENCY_LEVELS] == [True] * 5
