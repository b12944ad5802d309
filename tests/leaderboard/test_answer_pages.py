"""The answer pages on small crafted boards, each reading the verdicts (`leaderboard.verdicts`):
/best/ answers per ranking with the baseline as its denominator and never sets a 0.64x config
beside a 1.29x one; /nmax/ never crowns a degenerate or noisy run; a config's one best run is
the same on its row, its page, its energy figures and the API."""

from __future__ import annotations

import html
import json
import re

import pytest

from leaderboard import selectors, services
from leaderboard.models import Job, LeaderboardEntry, Run
from leaderboard.services.board import mark_test_weights
from runner.energy import energy_figures
from tests.support.baselines import with_baseline_section

TARGET = "tiny-qwen3"
REPEATED = "a a a a a a a a"


@pytest.fixture
def real_models(models):
    """The tiny models cleared of their test-weights mark: these answers are about what ranks."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


def text(response) -> str:
    assert response.status_code == 200, response.status_code
    return re.sub(r"\s+", " ", html.unescape(response.content.decode()))


def embedded(page: str, element_id: str):
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    return json.loads(found.group(1)) if found else None


def config(spec_type: str, n_max: int, *, prompt: str | None = None) -> dict:
    protocol = {"name": "quick", "n_predict": 64, "runs": 3} | (
        {"prompt": prompt} if prompt else {}
    )
    data = {
        "target_model": "tiny-qwen3.gguf",
        "spec_types": [spec_type],
        "n_max": n_max,
        "protocol": protocol,
    }
    return data | ({"draft_model": "tiny-qwen3.gguf"} if spec_type == "draft-simple" else {})


def measured(user, hardware, make_result, data: dict, decode: list[float], **options) -> Job:
    """A config measured with its paired baseline beside it ([50, 50.5, 49.5] tok/s, the same
    outputs: lossless)."""
    job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, decode, draft=(40, 30), tau=2.2, **options),
            make_result(job.config.baseline.key, [50.0, 50.5, 49.5]),
        ),
    )
    job.refresh_from_db()
    return job


# /best/ ----------------------------------------------------------------------------------------


@pytest.fixture
def demo_board(user, real_models, hardware, enqueued, make_result) -> dict[str, Job]:
    """The demo board's shape: draft-simple at 0.64x on the quick protocol's prompt and
    ngram-simple at 1.29x on another prompt, both widely spread (their 95% intervals overlap
    each other's and the baselines'), each workload with its own baseline."""
    return {
        "slow": measured(
            user, hardware, make_result, config("draft-simple", 4), [20.0, 32.0, 44.0]
        ),
        "fast": measured(
            user,
            hardware,
            make_result,
            config("ngram-simple", 4, prompt=REPEATED),
            [50.0, 64.5, 79.0],
        ),
    }


def best_sections(page: str) -> list[str]:
    return re.findall(r'<section class="best-answer"[^>]*>(.*?)</section>', page)


def test_best_answers_per_ranking_and_never_sets_a_slow_config_beside_a_fast_one(
    client, demo_board
):
    slow, fast = demo_board["slow"].config, demo_board["fast"].config
    assert LeaderboardEntry.objects.get(config=slow).speedup == pytest.approx(0.64)
    assert LeaderboardEntry.objects.get(config=fast).speedup == pytest.approx(1.29)

    answers = selectors.best_config_for(target_name=TARGET, memory_bytes=10**10)

    # One answer per ranking, every row of an answer from that ranking.
    assert len(answers) == 2
    for answer in answers:
        rows = [answer.best, *answer.tied, *answer.others]
        rows += [answer.baseline] if answer.baseline else []
        assert {row.ranking_key for row in rows} == {answer.best.ranking_key}
    by_best = {answer.best.config.key: answer for answer in answers}
    assert set(by_best) == {fast.key, slow.baseline.key}
    # Where no drafting is faster, no drafting is the answer, not the 0.64x config.
    assert by_best[slow.baseline.key].baseline is None
    assert by_best[fast.key].baseline.config == fast.baseline

    page = text(client.get("/best/", {"target": TARGET, "memory_gb": "10"}))
    assert "as good a choice" not in page
    sections = best_sections(page)
    assert len(sections) == 2
    (repeated,) = [s for s in sections if f"prompt “{REPEATED}”" in s]
    (default,) = [s for s in sections if s is not repeated]
    answer = re.search(r'<p class="answer"[^>]*>(.*?)</p>', repeated).group(1)
    assert fast.key in answer and "1.29×" in answer
    # The 0.64x config and the other workload's baseline are nowhere in the 1.29x one's answer.
    assert slow.key not in repeated and slow.baseline.key not in repeated
    denominator = re.search(r'<p class="sub best-baseline">(.*?)</p>', repeated).group(1)
    assert "the denominator" in denominator and fast.baseline.key in denominator
    default_answer = re.search(r'<p class="answer"[^>]*>(.*?)</p>', default).group(1)
    assert slow.baseline.key in default_answer and "no drafting" in default_answer
    assert slow.key not in default_answer and fast.key not in default
    assert 'class="ranking-heading"' in repeated and 'class="ranking-heading"' in default


def test_best_shows_the_fastest_answers_first_and_counts_the_rest(client, demo_board, monkeypatch):
    monkeypatch.setattr("leaderboard.views.answers.BEST_ANSWERS", 1)
    fast = demo_board["fast"].config

    page = text(client.get("/best/", {"target": TARGET, "memory_gb": "10"}))

    (section,) = best_sections(page)
    assert fast.key in section  # the 1.29x answer is the faster of the two rankings'
    assert "1 more ranking (other workloads, GPUs or releases)" in page


# /nmax/ ----------------------------------------------------------------------------------------


def degenerate_result(make_result, key: str, decode: list[float]) -> dict:
    """A result whose output looped (repetitive 4-grams): its batch is degenerate."""
    result = make_result(key, decode, draft=(40, 30), tau=2.2)
    for record in result["requests"]:
        record["distinct_4gram_ratio"] = 0.01
    result["summary"]["degenerate"] = True
    return result


def test_nmax_never_crowns_a_degenerate_or_noisy_run(
    client, user, real_models, hardware, enqueued, make_result
):
    clean = measured(user, hardware, make_result, config("draft-simple", 2), [100.0, 101.0, 99.0])
    # Faster on average, but one request of three took far longer: noisy.
    noisy = measured(user, hardware, make_result, config("draft-simple", 3), [20.0, 200.0, 170.0])
    looped = services.submit_config(
        owner=user, data=config("draft-simple", 4), hardware_slug=hardware.slug
    )
    services.record_result(
        job_id=looped.pk, result=degenerate_result(make_result, looped.config.key, [900.0] * 3)
    )
    assert LeaderboardEntry.objects.get(config=noisy.config).noisy
    assert LeaderboardEntry.objects.get(config=looped.config).degenerate

    page = text(client.get("/nmax/", {"target": TARGET, "hardware": hardware.slug}))

    [series] = embedded(page, "nmax-data")["types"]
    assert series["best_n_max"] == 2
    rows = {row["n_max"]: row for row in series["rows"]}
    assert rows[2]["best"] and not rows[3]["best"] and "noisy" in rows[3]["flags"]
    assert 4 not in rows  # a degenerate row is no answer at all
    assert "best n_max 2" in page
    best_rows = re.findall(r'<tr class="best">(.*?)</tr>', page)
    assert len(best_rows) == 1 and clean.config.key in best_rows[0]
    assert looped.config.key not in page.split('id="nmax-data"')[0]

    # With only the noisy point left, nothing is crowned, and the page says why.
    LeaderboardEntry.objects.filter(config=clean.config).update(synthetic=True)
    services.raise_board_version()
    page = text(client.get("/nmax/", {"target": TARGET, "hardware": hardware.slug}))
    [series] = embedded(page, "nmax-data")["types"]
    assert series["best_n_max"] is None and not any(row["best"] for row in series["rows"])
    assert "no best n_max: every point is noisy" in page and '<tr class="best">' not in page


# One best run ----------------------------------------------------------------------------------


def with_energy(result: dict, joules_per_request: float) -> dict:
    """The result with NVML's energy on every request and the summary those give."""
    for record in result["requests"]:
        record["energy_joules"] = joules_per_request
    result["summary"] |= energy_figures(result["requests"])
    return result


def test_the_row_the_config_page_its_energy_and_the_api_name_one_best_run(
    client, user, real_models, hardware, enqueued, make_result
):
    data = config("draft-simple", 4)
    batches = {}
    # A clean batch; a faster one whose output looped; a faster still, but noisy.
    for name, decode, joules in (
        ("clean", [100.0, 104.0, 102.0], 5.0),
        ("looped", [150.0, 152.0, 151.0], 7.0),
        ("noisy", [20.0, 300.0, 250.0], 9.0),
    ):
        job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
        result = (
            degenerate_result(make_result, job.config.key, decode)
            if name == "looped"
            else make_result(job.config.key, decode, draft=(40, 30), tau=2.2)
        )
        services.record_result(job_id=job.pk, result=with_energy(result, joules))
        batches[name] = Run.objects.get(job=job)
    clean = batches["clean"]
    assert batches["looped"].degenerate and not clean.degenerate

    row = LeaderboardEntry.objects.get(config=clean.config)
    assert row.best_run == clean and row.runs_count == 3
    assert row.tokens_per_second == pytest.approx(102.0) and not row.degenerate and not row.noisy

    page = text(client.get(f"/configs/{clean.config.key}/"))
    provenance = re.search(r"Provenance <span class=\"sub\">of the best run, (.*?)</span>", page)
    assert f'href="/runs/{clean.pk}/">run #{clean.pk}<' in provenance.group(1)
    # Its energy: 5 J a request over 64 tokens, not the looped or noisy batch's.
    energy = re.search(r'<dd id="joules-per-token">(.*?) J', page).group(1)
    assert energy == "0.078"

    (api,) = [
        r
        for r in client.get("/api/v1/leaderboard").json()["results"]
        if r["config_key"] == clean.config.key
    ]
    assert api["best_run_id"] == clean.pk
    assert api["tokens_per_second"] == pytest.approx(102.0)
    assert api["joules_per_token"] == pytest.approx(5.0 / 64)
