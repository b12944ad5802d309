"""The output-length protocol on the site: the config page's "speedup against output length"
table and chart data, the API's per-length figures (both from `selectors.evidence.output_length`,
by the verdict layer's rule), how such a row ranks (its own ranking, as a depth sweep), and hostile
uploads (NaN, huge or unsorted lengths) refused with a clear error while every page stays up."""

from __future__ import annotations

import copy
import json
import math

import pytest
from django.test import Client

from leaderboard import selectors, verdicts
from leaderboard.models import Config, LeaderboardEntry, Run
from leaderboard.services.configs import protocol_variant
from leaderboard.verdicts.output_length import length_verdicts
from runner.protocols.output_length import speedup_interval
from tests.support.api_clients import token_client, upload
from tests.support.output_length_results import output_length_config, output_length_result
from tests.support.pages import embedded, text
from tests.support.protocol_runs import import_result

LENGTHS = [16, 32, 64]
# Decode tok/s per length: drafting pays at the short lengths and not at the longest, as a DFlash
# user measured (2.58x at 64 tokens, 0.84x at 2,048).
SPECULATIVE = [120.0, 90.0, 50.0]
BASELINE = [50.0, 60.0, 62.5]


@pytest.fixture
def models_dir(tiny_models):
    return next(iter(tiny_models.values())).parent


@pytest.fixture
def uploader(user):
    """The test user's token client."""
    return token_client(user)


@pytest.fixture
def output_length_file(models_dir) -> dict:
    return output_length_result(
        output_length_config(LENGTHS), SPECULATIVE, BASELINE, models_dir=models_dir
    )


@pytest.fixture
def output_length_runs(user, ranked_models, hardware, output_length_file) -> list[Run]:
    return import_result(user, hardware, output_length_file)


def config_key() -> str:
    return output_length_config(LENGTHS).key


# Verdicts


def test_each_length_is_faster_slower_or_not_established_by_its_interval(output_length_file):
    found = length_verdicts(output_length_file["points"], output_length_file["baseline"]["points"])
    assert [v.output_tokens for v in found] == LENGTHS
    assert [v.speedup for v in found] == pytest.approx([2.4, 1.5, 0.8], rel=1e-3)
    assert [v.verdict for v in found] == ["faster", "faster", "slower"]
    # The page's interval is the one the result was checked with at the door.
    for verdict, point in zip(found, output_length_file["points"], strict=True):
        assert verdict.speedup_interval == pytest.approx(
            (point["speedup_ci95_low"], point["speedup_ci95_high"])
        )


def test_a_length_without_spread_or_baseline_is_not_established(output_length_file):
    points = copy.deepcopy(output_length_file["points"])
    points[0]["decode_tokens_per_second"] |= {"n": 1, "stdev": None}
    found = length_verdicts(points, output_length_file["baseline"]["points"][:2])
    assert [v.verdict for v in found] == ["not established", "faster", "not established"]
    assert found[0].speedup_interval is None and found[2].speedup is None


def test_an_output_length_row_ranks_only_among_the_same_lengths_and_input(
    output_length_runs, hardware
):
    config = Config.objects.get(key=config_key())
    assert verdicts.workload_label(config) == "output length 16–64 tokens (3 lengths), 32 in"
    assert verdicts.is_across_lengths(config) and not verdicts.is_across_depths(config)
    # The lengths and the input are the workload; how many requests a length took is not.
    variant = config.protocol_variant
    assert protocol_variant(output_length_config([16, 32, 128]).canonical()["protocol"]) != variant
    longer_input = output_length_config(LENGTHS, protocol={"input_tokens": 64})
    assert protocol_variant(longer_input.canonical()["protocol"]) != variant
    more = output_length_config(LENGTHS, protocol={"requests": 9})
    assert protocol_variant(more.canonical()["protocol"]) == variant
    entry = LeaderboardEntry.objects.get(config=config)
    # A geometric mean over lengths has no one-batch interval, as across depths.
    assert entry.speedup == pytest.approx((2.4 * 1.5 * 0.8) ** (1 / 3), rel=1e-3)
    assert entry.speedup_ci95_low is None


# The config page and the API


def test_the_config_page_shows_speedup_against_output_length_with_its_intervals(
    client: Client, output_length_runs
):
    response = client.get(f"/configs/{config_key()}/")
    assert response.status_code == 200
    page = response.content.decode()
    data = embedded(page, "output-length-data")
    assert data["lengths"] == [16, 32, 64] and data["asked"] == [16, 32, 64]
    assert data["speedup"] == pytest.approx([2.4, 1.5, 0.8], rel=1e-3)
    assert data["verdicts"] == ["faster", "faster", "slower"]
    assert all(
        low < s < high
        for low, s, high in zip(data["ci95_low"], data["speedup"], data["ci95_high"], strict=True)
    )
    shown = text(response)
    assert "Speedup against output length" in shown
    assert "2.40×" in shown and "0.80×" in shown
    assert "Every request generated exactly the length asked for" in shown
    assert 'data-chart-source="output-length-data"' in page


def test_the_api_gives_each_length_s_figures_from_the_same_rule(
    client: Client, output_length_runs, output_length_file
):
    body = client.get(f"/api/v1/configs/{config_key()}").json()
    rows = body["output_lengths"]
    assert [row["output_tokens"] for row in rows] == LENGTHS
    assert [row["generated_tokens"] for row in rows] == LENGTHS
    assert [row["verdict"] for row in rows] == ["faster", "faster", "slower"]
    for row, point, reference in zip(
        rows, output_length_file["points"], output_length_file["baseline"]["points"], strict=True
    ):
        assert (row["ci95_low"], row["ci95_high"]) == pytest.approx(
            speedup_interval(point, reference)
        )
        assert row["decode"] == pytest.approx(point["decode_tokens_per_second"]["mean"])


def test_other_protocols_configs_have_no_output_length_figures(client: Client, concurrency_runs):
    key = concurrency_runs[-1].config.key
    assert client.get(f"/api/v1/configs/{key}").json()["output_lengths"] is None
    assert "output-length-data" not in client.get(f"/configs/{key}/").content.decode()


# Hostile uploads and damaged stored points


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (lambda r: r["points"][0].update(speedup_ci95_low=math.nan), "NaN is not valid JSON"),
        (lambda r: r["config"]["protocol"].update(output_lengths=[16, 32, 10**9]), "output_length"),
        (lambda r: r["config"]["protocol"].update(output_lengths=[64, 32, 16]), "strictly increasing"),
        (lambda r: r["points"][2].update(speedup=2.58), "points.2.speedup is 2.58"),
        (lambda r: r["points"][1]["generated_tokens"].update(max=10**9), "generated_tokens.max"),
    ],
)  # fmt: skip
def test_a_hostile_output_length_upload_is_refused_with_a_clear_error_and_pages_stay_up(
    client: Client, uploader, output_length_file, ranked_models, tamper, named
):
    result = copy.deepcopy(output_length_file)
    tamper(result)
    body = json.dumps(result, allow_nan=True).encode()
    response = upload(uploader, body)
    assert response.status_code == 400
    assert named in json.dumps(response.json())
    assert not Run.objects.exists()
    for url in ("/", f"/configs/{config_key()}/", "/api/v1/leaderboard", "/api/v1/configs"):
        assert client.get(url).status_code in (200, 404), url


def test_an_honest_output_length_upload_is_recorded_and_shown(
    client: Client, uploader, output_length_file, ranked_models
):
    response = upload(uploader, output_length_file)
    assert response.status_code == 201, response.content
    # A self-reported config's key names its reporter: the run says which it is.
    page = client.get(f"/configs/{Run.objects.get(config__spec_label='draft-dflash').config.key}/")
    assert page.status_code == 200
    assert embedded(page.content.decode(), "output-length-data")["verdicts"][-1] == "slower"


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.pop("generated_tokens", None),
        lambda p: p.update(output_tokens="long", decode_tokens_per_second=None),
        lambda p: p.update(decode_tokens_per_second={"n": "two", "mean": "Infinity", "stdev": -1}),
        lambda p: p.update(output_tokens=10**18, generated_tokens={"mean": "x"}),
        lambda p: p.update(output_tokens=True, speedup_ci95_low="wide"),
    ],
)
def test_damaged_stored_output_length_points_never_break_a_page(
    client: Client, output_length_runs, damage
):
    for run in Run.objects.all():
        for point in run.raw_result["points"]:
            damage(point)
        if run.raw_result.get("baseline"):
            for point in run.raw_result["baseline"]["points"]:
                damage(point)
        run.save(update_fields=["raw_result"])
    key = config_key()
    for url in (f"/configs/{key}/", "/", f"/runs/{output_length_runs[-1].pk}/"):
        assert client.get(url).status_code == 200, url
    for url in (f"/api/v1/configs/{key}", "/api/v1/leaderboard", "/api/v1/configs"):
        assert client.get(url).status_code == 200, url


def test_the_board_filters_by_the_output_length_protocol(client: Client, output_length_runs):
    page = client.get("/", {"protocol": "output-length"}).content.decode()
    assert '<option value="output-length"' in page
    assert f"/configs/{config_key()}/" in page
    assert "output length 16–64 tokens (3 lengths), 32 in" in text(client.get("/"))


def test_the_run_page_names_each_request_s_output_length(client: Client, output_length_runs):
    run = Run.objects.get(config__key=config_key())
    assert selectors.point_labels(run=run) == {
        0: "32 in, 16 out",
        1: "32 in, 32 out",
        2: "32 in, 64 out",
    }
    assert "32 in, 64 out" in text(client.get(f"/runs/{run.pk}/"))


def test_an_output_length_config_is_submitted_through_the_api_and_bad_lengths_are_field_errors(
    uploader, models, hardware, enqueued
):
    config = {
        "target_model": "tiny-qwen3.gguf",
        "draft_model": "tiny-qwen3.gguf",
        "spec_types": "draft-simple",
        "protocol": {"name": "output-length", "input_tokens": 32, "output_lengths": [16, 64]},
    }
    body = {"hardware": hardware.slug, "config": config}
    response = uploader.post("/api/v1/submissions", body, format="json")
    assert response.status_code == 201, response.json()
    bad = copy.deepcopy(body)
    bad["config"]["protocol"]["output_lengths"] = [64, 16, 16]
    refused = uploader.post("/api/v1/submissions", bad, format="json")
    assert refused.status_code == 400
    assert "strictly increasing" in json.dumps(refused.json())
