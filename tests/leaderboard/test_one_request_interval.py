"""A batch of one request has no interval: its run, job and config pages say "no interval", its
API row has a null stdev and interval, and a file (or a stored row) written with the old
zero-width convention (stdev 0.0, ci95_low == ci95_high == the mean) loads and shows the same."""

from __future__ import annotations

import html
import re

import pytest

from leaderboard import services
from leaderboard.models import Run
from tests.support.measured_configs import draft_simple


def text(response) -> str:
    assert response.status_code == 200
    return re.sub(r"\s+", " ", html.unescape(response.content.decode()))


def old_form(result: dict) -> dict:
    """The result as files before the null-spread rule have it: every statistic of one value
    with stdev 0.0 and an interval of exactly its mean."""
    statistics = [result["summary"][name] for name in ("decode_tokens_per_second",
                  "end_to_end_tokens_per_second", "ttft_ms")]  # fmt: skip
    for statistic in statistics:
        if statistic["n"] == 1:
            statistic |= {
                "stdev": 0.0,
                "ci95_low": statistic["mean"],
                "ci95_high": statistic["mean"],
            }
    return result


@pytest.fixture
def one_request_job(user, models, hardware, enqueued):
    return services.submit_config(owner=user, data=draft_simple(3), hardware_slug=hardware.slug)


def pages(client, run: Run) -> list[str]:
    return [
        text(client.get(f"/runs/{run.pk}/")),
        text(client.get(f"/jobs/{run.job_id}/")),
        text(client.get(f"/configs/{run.config.key}/")),
    ]


@pytest.mark.parametrize("written", ["null", "zero-width"])
def test_a_one_request_run_shows_no_interval_whichever_form_its_file_used(
    client, one_request_job, make_result, written
):
    result = make_result(one_request_job.config.key, [120.0], draft=(40, 30), tau=2.5)
    assert result["summary"]["decode_tokens_per_second"]["ci95_low"] is None
    if written == "zero-width":
        result = old_form(result)
        assert result["summary"]["decode_tokens_per_second"]["ci95_high"] == 120.0

    services.record_result(job_id=one_request_job.pk, result=result)

    run = Run.objects.get(job=one_request_job)
    assert run.n == 1 and run.decode_mean == 120.0
    assert (run.decode_stdev, run.decode_ci95_low, run.decode_ci95_high) == (None, None, None)
    run_page, job_page, config_page = pages(client, run)
    assert "(95% CI no interval, n 1)" in run_page
    assert "95% CI no interval" in job_page
    for page in (run_page, job_page, config_page):
        assert "120.0 – 120.0" not in page
    assert "no interval" in config_page
    api = client.get(f"/api/v1/runs/{run.pk}").json()
    assert (api["decode_stdev"], api["decode_ci95_low"], api["decode_ci95_high"]) == (None,) * 3


def test_a_row_stored_with_a_zero_width_interval_still_shows_no_interval(
    client, one_request_job, make_result
):
    services.record_result(
        job_id=one_request_job.pk, result=make_result(one_request_job.config.key, [120.0])
    )
    # As the site stored one-request batches before the rule.
    Run.objects.filter(job=one_request_job).update(
        decode_stdev=0.0, decode_ci95_low=120.0, decode_ci95_high=120.0
    )
    run = Run.objects.get(job=one_request_job)

    assert run.ci95 == (None, None)
    for page in pages(client, run):
        assert "120.0 – 120.0" not in page
    api = client.get(f"/api/v1/runs/{run.pk}").json()
    assert (api["decode_stdev"], api["decode_ci95_low"], api["decode_ci95_high"]) == (None,) * 3


def test_two_requests_still_show_their_interval(client, one_request_job, make_result):
    services.record_result(
        job_id=one_request_job.pk, result=make_result(one_request_job.config.key, [100.0, 104.0])
    )
    run = Run.objects.get(job=one_request_job)
    low, high = run.ci95

    assert low < 102.0 < high
    assert f"(95% CI {max(low, 0):,.1f} – {high:,.1f}, n 2)" in pages(client, run)[0]
