"""The quality protocol on the site: the accuracies and their paired difference beside the
fidelity badge on the config and run pages and in the API (from `selectors.evidence.quality`, the
verdict from `verdicts.quality_change`), how such a row ranks (only among the same tasks, seed and
length), and hostile uploads (a contradicting claim, NaN, NUL, huge answers) refused with a
clear error while every page stays up."""

from __future__ import annotations

import copy
import hashlib
import json
import math

import pytest
from django.test import Client

from leaderboard import verdicts
from leaderboard.models import Config, LeaderboardEntry, Run
from runner import stats
from runner.protocols import quality
from tests.support.api_clients import token_client, upload
from tests.support.pages import element_text
from tests.support.protocol_runs import import_result
from tests.support.quality_results import quality_config, quality_result

# Twelve tasks: the draft gets 3 right, its baseline 11 (the draft changed answers).
WORSE = [True, True, True] + [False] * 9
BASELINE = [True] * 11 + [False]


@pytest.fixture
def models_dir(tiny_models):
    return next(iter(tiny_models.values())).parent


@pytest.fixture
def quality_file(models_dir) -> dict:
    return quality_result(WORSE, BASELINE, models_dir=models_dir)


@pytest.fixture
def quality_runs(user, ranked_models, hardware, quality_file) -> list[Run]:
    return import_result(user, hardware, quality_file)


def key() -> str:
    return quality_config(len(WORSE)).key


def quality_text(response) -> str:
    """The quality figures' paragraph of a page as a person reads it."""
    assert response.status_code == 200
    found = element_text(response.content.decode(), "quality")
    assert found is not None
    return " ".join(found.split())


# The verdict


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (-0.9, -0.1, verdicts.FEWER_CORRECT),
        (0.05, 0.4, verdicts.MORE_CORRECT),
        (-0.2, 0.3, verdicts.NO_CHANGE_SHOWN),
        (0.0, 0.0, verdicts.NO_CHANGE_SHOWN),
        (math.nan, 0.1, None),
        (None, 0.1, None),
        (0.3, -0.3, None),
    ],
)
def test_a_change_is_shown_only_where_the_interval_leaves_out_zero(low, high, verdict):
    assert verdicts.quality_change(low, high) == verdict


# Pages and API


def test_the_config_page_shows_both_accuracies_and_the_difference_beside_the_badge(
    client: Client, quality_runs, quality_file
):
    response = client.get(f"/configs/{key()}/")
    assert response.status_code == 200
    shown = quality_text(response)
    assert "Quality 3 of 12 tasks correct: accuracy 25.0%" in shown
    assert "paired baseline 11 of 12, 91.7%" in shown
    difference = quality_file["summary"]["quality_difference"]
    low, high = difference["ci95_low"] * 100, difference["ci95_high"] * 100
    assert f"difference −66.7 points (Newcombe paired 95% CI {low:+.1f}".replace("-", "−") in shown
    assert f"to {high:+.1f}".replace("-", "−") in shown
    assert "fewer correct" in shown
    assert "8 only on the baseline" in shown


def test_the_run_pages_show_each_side_s_accuracy(client: Client, quality_runs):
    baseline, speculative = quality_runs
    shown = quality_text(client.get(f"/runs/{speculative.pk}/"))
    assert "accuracy 25.0%" in shown and "fewer correct" in shown
    shown = quality_text(client.get(f"/runs/{baseline.pk}/"))
    assert shown.startswith("Quality 11 of 12 tasks correct: accuracy 91.7%")
    # A baseline has no baseline of its own: no difference, no verdict.
    assert "difference" not in shown and "correct" not in shown.split("correct:", 1)[1]


def test_the_api_gives_the_accuracies_the_difference_and_every_scored_task(
    client: Client, quality_runs, quality_file
):
    baseline, speculative = quality_runs
    body = client.get(f"/api/v1/runs/{speculative.pk}").json()
    assert body["quality"]["accuracy"]["correct"] == 3
    assert body["quality"]["baseline"]["correct"] == 11
    difference = body["quality"]["difference"]
    assert difference["value"] == pytest.approx(-8 / 12)
    assert difference["verdict"] == "fewer correct"
    assert difference["ci95"] == pytest.approx(
        [
            quality_file["summary"]["quality_difference"]["ci95_low"],
            quality_file["summary"]["quality_difference"]["ci95_high"],
        ]
    )
    tasks = body["quality_tasks"]
    expected = quality.tasks(seed=2026, count=12)
    assert [t["task_id"] for t in tasks] == [t.task_id for t in expected]
    assert [t["correct"] for t in tasks] == WORSE
    assert client.get(f"/api/v1/runs/{baseline.pk}").json()["quality"]["difference"] is None
    listed = client.get(f"/api/v1/runs?config={key()}").json()
    assert {row["quality"]["accuracy"]["correct"] for row in listed["results"]} == {3}
    config = client.get(f"/api/v1/configs/{key()}").json()
    assert config["quality"]["difference"]["verdict"] == "fewer correct"


def test_the_board_filters_quality_rows(client: Client, quality_runs, concurrency_runs):
    rows = client.get("/api/v1/leaderboard?protocol=quality").json()["results"]
    assert rows and {row["config_key"] for row in rows} <= {key(), quality_runs[0].config.key}
    assert 'value="quality"' in client.get("/").content.decode()


def test_other_protocols_have_no_quality_figures(client: Client, concurrency_runs):
    run = concurrency_runs[-1]
    assert client.get(f"/api/v1/runs/{run.pk}").json()["quality"] is None
    assert client.get(f"/api/v1/runs/{run.pk}").json()["quality_tasks"] is None
    assert client.get(f"/api/v1/configs/{run.config.key}").json()["quality"] is None
    assert 'id="quality"' not in client.get(f"/configs/{run.config.key}/").content.decode()


def test_a_quality_row_ranks_only_among_the_same_tasks_seed_and_length(
    user, ranked_models, hardware, quality_runs, models_dir, concurrency_runs
):
    import_result(user, hardware, quality_result(WORSE[:8], BASELINE[:8], models_dir=models_dir))
    import_result(
        user, hardware, quality_result(WORSE, BASELINE, models_dir=models_dir, task_seed=9)
    )
    configs = Config.objects.filter(protocol="quality", synthetic=False).exclude(spec_label="none")
    entries = LeaderboardEntry.objects.filter(config__in=configs)
    assert entries.count() == 3
    assert len({entry.ranking_key for entry in entries}) == 3
    speed = LeaderboardEntry.objects.filter(config=concurrency_runs[-1].config).get()
    assert speed.ranking_key not in {entry.ranking_key for entry in entries}
    assert verdicts.workload_label(Config.objects.get(key=key())) == (
        "quality 12 tasks, seed 2026, greedy, 32 out"
    )


# Hostile uploads


@pytest.fixture
def uploader(user):
    return token_client(user)


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (lambda r: r["summary"]["quality"].update(correct=12, accuracy=1.0), "scored requests give 3"),
        (lambda r: r["summary"]["quality_difference"].update(difference=0.0), "quality_difference.difference"),
        (lambda r: r["requests"][5]["quality"].update(correct=True), "quality.correct is true"),
        (lambda r: r["summary"]["quality"].update(accuracy=math.nan), "NaN"),
        (lambda r: r["requests"][0]["quality"].update(output_text="1\x002"), "NUL"),
        (lambda r: r["requests"][0]["quality"].update(extracted="9" * 50_000), "at most 256"),
        (lambda r: r["requests"][0]["quality"].update(expected=None), "quality.expected"),
        (lambda r: r["config"]["protocol"].update(tasks=10**9), "tasks"),
    ],
)  # fmt: skip
def test_a_hostile_quality_upload_is_refused_with_a_clear_error_and_pages_stay_up(
    client: Client, uploader, quality_file, ranked_models, tamper, named
):
    result = copy.deepcopy(quality_file)
    tamper(result)
    response = upload(uploader, json.dumps(result, allow_nan=True).encode())
    assert response.status_code == 400
    assert named in json.dumps(response.json(), ensure_ascii=False)
    assert not Run.objects.exists()
    for url in ("/", f"/configs/{key()}/", "/api/v1/leaderboard", "/api/v1/configs"):
        assert client.get(url).status_code in (200, 404), url


def test_an_honest_upload_with_odd_answer_text_is_recorded_and_shown_escaped(
    client: Client, uploader, models_dir, ranked_models
):
    config = quality_config(len(WORSE))
    result = quality_result(WORSE, BASELINE, models_dir=models_dir)
    task = quality.tasks(seed=2026, count=1)[0]
    odd = quality.score(task, " <script>alert(1)</script> ✓ " + "9" * 300 + "\n" + "x" * 3000)
    # Another text is another output: its hash and its divergence from the baseline's follow.
    result["requests"][0] |= {
        "quality": odd,
        "output_sha256": hashlib.sha256(odd["output_text"].encode()).hexdigest(),
        "first_divergence": 0,
        "divergence": "mismatch",
    }
    result["summary"]["quality"]["correct"] -= 1
    result["summary"]["quality"]["accuracy"] = 2 / 12
    result["summary"]["quality"] |= {
        k: v for k, v in stats.accuracy_figures(result["requests"]).items() if k.startswith("ci")
    }
    paired = stats.quality_difference(result["requests"], result["baseline"]["requests"])
    result["summary"]["quality_difference"] = paired
    response = upload(uploader, result)
    assert response.status_code == 201, response.content
    # An upload is self-reported: its config's key names its reporter too.
    run = Run.objects.exclude(config__spec_label="none").get()
    assert run.config.canonical["protocol"] == config.canonical()["protocol"]
    for url in (f"/configs/{run.config.key}/", f"/runs/{run.pk}/"):
        page = client.get(url)
        assert page.status_code == 200
        assert "<script>alert" not in page.content.decode()
        assert "accuracy 16.7%" in quality_text(page)
    tasks = client.get(f"/api/v1/runs/{run.pk}").json()["quality_tasks"]
    assert tasks[0]["extracted"].startswith("<script>") and len(tasks[0]["extracted"]) == 256


@pytest.mark.parametrize(
    "damage",
    [
        lambda r, _: r["summary"].update(quality="lots"),
        lambda r, _: r["summary"].update(quality={"tasks": 0, "correct": 3}),
        lambda r, _: r["summary"]["quality"].update(tasks=True, correct=-1),
        lambda r, _: r["summary"]["quality"].update(correct=10**30),
        lambda r, _: r["summary"].update(quality_difference={"pairs": "x", "difference": "inf"}),
        lambda r, _: r["summary"].get("quality_difference", {}).update(ci95_low="wide", pairs=0),
        lambda _, requests: requests[0].details.update(quality=["not", "a", "score"]),
        lambda r, _: r["summary"].get("quality_difference", {}).update(both_correct=10**6),
        lambda _, requests: [record.details.update(quality="none") for record in requests],
    ],
)
def test_damaged_stored_quality_figures_never_break_a_page(client: Client, quality_runs, damage):
    for run in Run.objects.all():
        # The stored result and its requests, each request stored once as its record.
        requests = list(run.requests.order_by("index"))
        damage(run.raw_result, requests)
        run.save(update_fields=["raw_result"])
        for record in requests:
            record.save(update_fields=["details"])
    for run in quality_runs:
        for url in (f"/configs/{run.config.key}/", f"/runs/{run.pk}/", "/"):
            assert client.get(url).status_code == 200, url
        for url in (f"/api/v1/configs/{run.config.key}", f"/api/v1/runs/{run.pk}", "/api/v1/runs"):
            assert client.get(url).status_code == 200, url
