"""A noisy run says so where its number shows: the job page, the run page and its row, with why
in words and a re-run; a headline over few verify steps says so; a finished job shows its
speedup; the submit estimate warns when the target looped on these settings before."""

from __future__ import annotations

from leaderboard import services
from leaderboard.models import LeaderboardEntry, Run
from tests.support.measured_configs import degenerate_result, measure, quick_config
from tests.support.pages import element_text, text

# One request of three at 1.4 tok/s (its 64 tokens take 44 s), the others at 25-27 tok/s:
# the run.
OUTLIER_DECODE = [25.6, 1.43, 26.7]
# Ten requests, one at a third of the others' speed: its spread stays under half the mean,
# so only the outlier rule catches it.
ONE_SLOW_OF_TEN = [25.0, 25.4, 24.8, 25.1, 25.3, 24.9, 25.2, 25.0, 24.7, 8.0]


def test_a_job_with_an_outlier_request_is_flagged_with_why_and_a_re_run(
    client, user, models, hardware, enqueued, make_result
):
    job = measure(user, hardware, make_result, 4, OUTLIER_DECODE, runs=3)
    page = text(client.get(f"/jobs/{job.pk}/"))
    noise = element_text(page, "noise")

    assert noise is not None and "noisy" in noise
    assert "request 1 took 44.1 s (1.43 tok/s), the other 2 took 2.4–2.5 s" in noise
    assert "reaches 0 tok/s" in noise
    assert f'href="/submit/?from={job.config.key}" id="noise-rerun"' in page


def test_the_run_page_shows_the_same_flag(client, user, models, hardware, enqueued, make_result):
    job = measure(user, hardware, make_result, 4, OUTLIER_DECODE, runs=3)
    run = Run.objects.get(job=job)
    page = text(client.get(f"/runs/{run.pk}/"))

    assert "request 1 took 44.1 s" in element_text(page, "noise")
    assert "Run this config again" in page


def test_a_clean_job_has_no_flag(client, user, models, hardware, enqueued, make_result):
    job = measure(user, hardware, make_result, 4, [25.6, 25.9, 26.2], runs=3)
    page = text(client.get(f"/jobs/{job.pk}/"))

    assert element_text(page, "noise") is None
    assert LeaderboardEntry.objects.get(config=job.config).noisy is False


def test_the_row_stores_the_outlier_that_the_spread_rule_misses(
    user, models, hardware, enqueued, make_result
):
    job = measure(user, hardware, make_result, 4, ONE_SLOW_OF_TEN, runs=10)
    row = LeaderboardEntry.objects.get(config=job.config)
    assert row.noisy is True


def test_a_finished_job_shows_its_speedup(client, user, models, hardware, enqueued, make_result):
    # 102 tok/s against its paired baseline's 51 in the same run.
    job = measure(user, hardware, make_result, 4, [100.0, 104.0], runs=2)
    speedup = element_text(text(client.get(f"/jobs/{job.pk}/")), "job-speedup")

    assert speedup is not None and "2.00×" in speedup and "same run" in speedup


def test_a_tau_over_few_verify_steps_says_so_on_the_job_and_run_pages(
    client, user, models, hardware, enqueued, make_result
):
    job = services.submit_config(
        owner=user, data=quick_config("draft-simple", 16), hardware_slug=hardware.slug
    )
    # 30 accepted drafts over 3 verify steps: tau 11.
    result = make_result(job.config.key, [25.0, 25.5, 25.2], draft=(40, 30), tau=11.0)
    services.record_result(job_id=job.pk, result=result)
    run = Run.objects.get(job=job)
    assert run.verify_steps < 20

    for url in (f"/jobs/{job.pk}/", f"/runs/{run.pk}/"):
        note = element_text(text(client.get(url)), "few-steps")
        assert note == f"(tau 11.0 from {run.verify_steps} verify steps)"


def test_the_estimate_warns_when_the_target_looped_on_these_settings(
    client, user, models, hardware, enqueued, make_result
):
    data = quick_config("draft-simple", 4)
    job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
    services.record_result(
        job_id=job.pk, result=degenerate_result(make_result, job.config.key, [25.0, 25.2, 25.1])
    )
    client.force_login(user)
    form = {
        "hardware": hardware.slug,
        "target_model": "tiny-qwen3.gguf",
        "protocol": "quick",
        "prompt": job.config.canonical["protocol"]["prompt"],
        "n_predict": "64",
        "runs": "5",  # how many runs does not change what loops
    }
    warned = client.post("/submit/estimate", form).json()["html"]
    assert "Known to loop" in warned and f"run {Run.objects.get(job=job).pk}" in warned

    other = client.post("/submit/estimate", form | {"n_predict": "32"}).json()["html"]
    assert "Known to loop" not in other
