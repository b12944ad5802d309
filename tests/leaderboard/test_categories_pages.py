"""The categories protocol on the site: the config page's breakdown, the /categories/ heatmap,
the API, submitting it (with field errors), energy and the roofline, and damaged stored points."""

from __future__ import annotations

import html
import json
import re

import pytest
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.models import Job, LeaderboardEntry, Run
from tests.support.protocol_results import (
    categories_config,
    category_records,
    concurrency_config,
    concurrency_records,
)

CATEGORIES = ["code", "math", "translation"]
DECODE = {"code": 180.0, "math": 120.0, "translation": 90.0}
BASELINE = {"code": 100.0, "math": 100.0, "translation": 100.0}
ACCEPTANCE = {"code": 0.9, "math": 0.6, "translation": 0.2}


def text(response) -> str:
    assert response.status_code == 200, response.status_code
    return re.sub(r"\s+", " ", html.unescape(response.content.decode()))


def json_data(page: str, element_id: str):
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    return json.loads(found.group(1))


def import_result(user, hardware, result) -> list[Run]:
    return services.import_runner_result(
        owner=user, hardware=hardware, result=result, source="test"
    )


@pytest.fixture
def category_runs(user, models, hardware, make_protocol_result) -> list[Run]:
    config = categories_config(CATEGORIES)
    result = make_protocol_result(
        config,
        category_records(config, DECODE, ACCEPTANCE),
        category_records(config.baseline(), BASELINE, None),
        joules_per_request=8.0,
    )
    return import_result(user, hardware, result)


def test_the_config_page_breaks_a_categories_result_down_by_category(client, category_runs):
    key = categories_config(CATEGORIES).key
    page = text(client.get(f"/configs/{key}/"))

    chart = json_data(page, "category-data")
    assert chart["categories"] == CATEGORIES
    assert chart["acceptance"] == pytest.approx([0.9, 0.6, 0.2])
    assert chart["speedup"] == pytest.approx([1.8, 1.2, 0.9], rel=1e-6)
    table = re.search(
        r'<table class="category-table" id="config-category-table">(.*?)</table>', page
    )
    rows = re.findall(r"<tr>.*?</tr>", table.group(1))
    assert "code" in rows[1] and "1.80×" in rows[1] and "90.0%" in rows[1]
    assert "translation" in rows[3] and "0.90×" in rows[3]


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
            category_records(ngram.baseline(), BASELINE, None),
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


def test_the_api_gives_a_config_its_categories_and_energy(client, category_runs):
    key = categories_config(CATEGORIES).key
    body = APIClient().get(f"/api/v1/configs/{key}").json()

    assert [c["category"] for c in body["categories"]] == CATEGORIES
    assert body["categories"][0]["speedup"] == pytest.approx(1.8)
    assert body["concurrency_levels"] is None and body["crossover_concurrency"] is None
    rows = APIClient().get("/api/v1/leaderboard", {"source": "all"}).json()["results"]
    (row,) = [r for r in rows if r["config_key"] == key]
    # 8 J a request over 32 generated tokens; no energy of an accepted draft token exists.
    assert row["joules_per_token"] == pytest.approx(8.0 / 32)
    assert row["joules_per_accepted_token"] is None
    assert row["roofline_fraction"] is None and row["roofline_flag"] is None


def test_energy_and_the_roofline_show_on_the_config_and_run_pages(client, category_runs):
    run = Run.objects.get(config__key=categories_config(CATEGORIES).key)
    for url in (f"/configs/{run.config.key}/", f"/runs/{run.pk}/"):
        page = text(client.get(url))
        assert re.search(r'<dd id="joules-per-token">0\.250 J <span', page), url
        assert "includes its prefill and any idle time within it" in page, url
        assert "Joules per accepted" not in page and "joules-per-accepted" not in page, url
    board = text(client.get("/", {"all": "1"}))
    assert "0.250 J/token" in board


def test_a_result_without_energy_shows_none_rather_than_zero(
    client, user, models, hardware, make_protocol_result
):
    config = concurrency_config([1, 2])
    import_result(
        user,
        hardware,
        make_protocol_result(
            config, concurrency_records(config, [50.0, 80.0], acceptance=0.5), None
        ),
    )
    run = Run.objects.get(config__key=config.key)
    page = text(client.get(f"/runs/{run.pk}/"))
    assert 'id="energy"' not in page and "J/token" not in text(client.get("/", {"all": "1"}))
    (row,) = APIClient().get("/api/v1/leaderboard", {"source": "all"}).json()["results"]
    assert row["joules_per_token"] is None and row["joules_per_accepted_token"] is None


def test_a_baseline_at_a_cpu_fallback_speed_is_flagged_far_below_the_roofline(
    client, user, models, hardware, make_protocol_result
):
    config = categories_config(CATEGORIES).baseline()
    # 100 tok/s against a ceiling of 10^12 bytes/s over the tiny target's bytes per token.
    result = make_protocol_result(
        config, category_records(config, BASELINE, None), None, bandwidth=10**13
    )
    assert result["summary"]["roofline"]["flag"] == "far_below"
    (run,) = import_result(user, hardware, result)
    page = text(client.get(f"/runs/{run.pk}/"))
    assert "far below" in page and "likely a CPU fallback" in page
    entry = LeaderboardEntry.objects.get(config=run.config)
    (row,) = [
        r
        for r in APIClient().get("/api/v1/leaderboard", {"source": "all"}).json()["results"]
        if r["id"] == entry.pk
    ]
    assert row["roofline_flag"] == "far_below" and row["roofline_fraction"] < 0.05


def categories_submission(hardware, **protocol) -> dict:
    return {
        "hardware": hardware.slug,
        "config": {
            "target_model": "tiny-qwen3.gguf",
            "spec_types": ["ngram-mod"],
            "protocol": {"name": "categories", "output_tokens": 16} | protocol,
        },
    }


@pytest.mark.parametrize(
    ("categories", "fragment"), [([], "at least one category"), (["poetry"], "unknown category")]
)
def test_empty_or_unknown_categories_are_a_field_error_in_the_api(
    user, models, hardware, enqueued, categories, fragment
):
    api = APIClient()
    api.force_authenticate(user=user)
    response = api.post(
        "/api/v1/submissions",
        categories_submission(hardware, categories=categories),
        format="json",
    )

    assert response.status_code == 400
    errors = response.json()["config"]
    assert fragment in " ".join(errors["protocol.categories.categories"])
    assert not Job.objects.exists()


def test_the_form_submits_chosen_categories_and_refuses_an_unknown_one_inline(
    client, user, models, hardware, enqueued
):
    client.force_login(user)
    form = {
        "hardware": hardware.slug,
        "target_model": "tiny-qwen3.gguf",
        "spec_types": ["ngram-mod"],
        "protocol": "categories",
        "categories": ["code", "poetry"],
        "output_tokens": "16",
        "prompts_per_category": "2",
        "warmup": "1",
    }
    page = text(client.post("/submit/", form))
    assert "poetry is not one of the available choices" in page
    assert not Job.objects.exists()

    assert client.post("/submit/", form | {"categories": ["math", "code"]}).status_code == 302
    job = Job.objects.get(config__spec_label="ngram-mod")
    protocol = job.config.canonical["protocol"]
    # The suite's order, whatever order they were checked in.
    assert protocol["categories"] == ["code", "math"] and protocol["prompts_per_category"] == 2


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


def test_each_category_carries_intervals_over_its_prompts_and_two_prompts_are_anecdotal(
    client, category_runs
):
    key = categories_config(CATEGORIES).key
    page = text(client.get(f"/configs/{key}/"))

    table = re.search(
        r'<table class="category-table" id="config-category-table">(.*?)</table>', page
    ).group(1)
    rows = re.findall(r"<tr>.*?</tr>", table)
    # Two prompts a category: each figure is an anecdote, and the page says so at the figure.
    assert all("anecdotal" in row for row in rows[1:])
    assert "· 2" in rows[1]
    body = client.get(f"/api/v1/configs/{key}").json()
    code = next(c for c in body["categories"] if c["category"] == "code")
    assert code["prompts"] == 2 and code["anecdotal"] is True
    low, high = code["speedup_ci95_low"], code["speedup_ci95_high"]
    assert low < code["speedup"] < high
