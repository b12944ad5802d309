"""A job's page: progress and time left while it runs, the error and log tail of a failure, its
result and paired baseline once finished (measured in the same run, or an automatic baseline
job linked both ways), where a queued job stands and when it should start, and cancelling it."""

from __future__ import annotations

from leaderboard import services
from leaderboard.models import Job
from tests.support.measured_configs import draft_simple
from tests.support.pages import text


def test_the_job_page_shows_progress_while_running(client, user, models, hardware, enqueued):
    job = services.submit_config(owner=user, data=draft_simple(4), hardware_slug=hardware.slug)
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    services.record_progress(
        job_id=job.pk, progress={"phase": "measuring", "done": 2, "total": 4, "tokens": 170}
    )
    page = text(client.get(f"/jobs/{job.pk}/"))

    assert 'data-field="status">running' in page
    assert '<progress max="100" value="50"' in page
    assert '<noscript><meta http-equiv="refresh" content="5"></noscript>' in page
    assert "leaderboard/job.js" in page


def test_the_job_page_estimates_the_time_left(client, user, ranked_models, hardware, enqueued):
    job = services.submit_config(owner=user, data=draft_simple(4), hardware_slug=hardware.slug)
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    services.record_progress(
        job_id=job.pk,
        progress={"phase": "measuring", "done": 2, "total": 6, "tokens": 128, "elapsed_s": 10.0},
    )
    page = text(client.get(f"/jobs/{job.pk}/"))

    assert '<progress max="100" value="33"' in page
    assert 'data-field="tokens">128</span> tokens' in page
    assert 'data-field="elapsed_s">10</span> s elapsed' in page
    assert 'about <span data-field="remaining_s">20</span> s to go' in page


def test_the_job_page_shows_the_error_and_log_tail_of_a_failure(
    client, user, models, hardware, enqueued
):
    job = services.submit_config(owner=user, data=draft_simple(4), hardware_slug=hardware.slug)
    services.record_failure(
        job_id=job.pk, error="engine crashed: exit code 134", log_tail="GGML_ASSERT(x) failed"
    )
    page = text(client.get(f"/jobs/{job.pk}/"))

    assert "engine crashed: exit code 134" in page and "GGML_ASSERT(x) failed" in page
    assert "http-equiv" not in page


def test_a_finished_job_page_shows_its_result_and_its_baseline_measured_in_the_same_run(
    client, measured_job
):
    page = text(client.get(f"/jobs/{measured_job.pk}/"))

    assert "<strong>102.00</strong> decode tok/s over 2 requests" in page
    assert "acceptance 75.0%" in page
    baseline = measured_job.config.baseline
    assert f'Paired baseline <a href="/configs/{baseline.key}/">{baseline.label}</a>: ' in page
    assert "measured in the same run as this job" in page
    assert "Paired baseline measured automatically" not in page


def test_a_synthetic_job_page_links_its_automatic_baseline_job_and_back(
    client, user, models, hardware, enqueued, make_result
):
    synthetic = services.submit_config(
        owner=user, data=draft_simple(4) | {"spec_synth_len": 3.0}, hardware_slug=hardware.slug
    )
    baseline = synthetic.baseline_jobs.get()
    services.record_result(
        job_id=baseline.pk, result=make_result(baseline.config.key, [50.0, 52.0])
    )

    page = text(client.get(f"/jobs/{synthetic.pk}/"))
    assert "Paired baseline measured automatically: " in page
    assert f'<a href="/jobs/{baseline.pk}/">job {baseline.pk}</a> (succeeded)' in page
    assert "measured in the same run" not in page
    own = text(client.get(f"/jobs/{baseline.pk}/"))
    assert f'automatic baseline for <a href="/jobs/{synthetic.pk}/">job {synthetic.pk}</a>' in own


def test_the_job_page_says_where_a_queued_job_stands_and_when_it_should_start(
    client, first_job, job_factory
):
    job_factory("succeeded", minute=1, started=0, took=120)
    mine = job_factory("queued", minute=200)
    page = client.get(f"/jobs/{mine.pk}/").content.decode()
    assert 'id="queue-standing"' in page
    assert 'data-field="queue_position">2</strong> for H200 (1 job ahead' in page
    # One job ahead of the median's 120 s, nothing running: it starts in about two minutes.
    assert "about 2 min from now" in page and "median job on this hardware 120 s" in page
    assert 'href="/hosts/"' in page


def test_the_job_page_says_unknown_without_history_and_nothing_once_it_ran(
    client, first_job, job_factory
):
    page = client.get(f"/jobs/{first_job.pk}/").content.decode()
    assert "estimated start: <strong>unknown</strong>" in page
    done = job_factory("succeeded", minute=1, started=0, took=60)
    assert 'id="queue-standing"' not in client.get(f"/jobs/{done.pk}/").content.decode()


def test_the_job_page_shows_what_the_jobs_api_reports(client, first_job, job_factory):
    # Both read selectors.job_report: the page cannot say another place, start or progress.
    job_factory("succeeded", minute=1, started=0, took=120)
    running = job_factory(
        "running", minute=100, progress={"phase": "measure", "done": 1, "total": 4, "elapsed_s": 30}
    )
    mine = job_factory("queued", minute=200)
    for job in (mine, running):
        report = client.get(f"/api/v1/jobs/{job.pk}").json()
        page = client.get(f"/jobs/{job.pk}/").content.decode()
        assert f'data-field="status">{report["status"]}</strong>' in page
        assert f'value="{report["progress"]["percent"]}" data-field="percent"' in page
        if report["queue_position"] is None:
            assert 'id="queue-standing"' not in page
        else:
            assert f'data-field="queue_position">{report["queue_position"]}</strong>' in page
            assert f'<time datetime="{report["estimated_start"][:19]}' in page
    # The running job: 30 s for one request of four, 90 s to go.
    assert (
        'data-field="remaining_s">90</span>' in client.get(f"/jobs/{running.pk}/").content.decode()
    )


def test_owners_cancel_from_the_job_page(client, user, models, hardware, enqueued):
    job = services.submit_config(owner=user, data=draft_simple(4), hardware_slug=hardware.slug)
    client.force_login(user)
    assert "Cancel job" in text(client.get(f"/jobs/{job.pk}/"))

    response = client.post(f"/jobs/{job.pk}/cancel/")

    job.refresh_from_db()
    assert response.status_code == 302 and job.status == Job.Status.CANCELLED
