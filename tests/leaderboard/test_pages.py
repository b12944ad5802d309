"""Pages people see: leaderboard, config detail with its chart data, submit form, job page."""

from __future__ import annotations

import json
import re

import pytest

from leaderboard import services
from leaderboard.models import Job
from tests.support.baselines import with_baseline_section
from tests.support.seed_kit import SEED_CSV

DRAFT_SIMPLE = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-qwen3.gguf",
    "spec_types": ["draft-simple"],
    "n_max": 4,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


@pytest.fixture
def measured(user, models, hardware, enqueued, make_result) -> Job:
    """A speculative job, finished with the paired baseline measured in the same run."""
    job = services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, [100.0, 104.0], draft=(40, 30), tau=2.2),
            make_result(job.config.baseline.key, [50.0, 52.0]),
        ),
    )
    job.refresh_from_db()
    return job


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def test_the_leaderboard_shows_rows_with_their_numbers_and_badges(client, measured):
    db_import = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000"
    )
    page = text(client.get("/"))

    assert "tiny-qwen3 · draft-simple · self-draft · n_max 4" in page
    assert "102.00" in page and "2.00×" in page and "75.0%" in page
    assert "qwen36-dflash15" in page and "3.60×" in page and "self-reported" in page
    assert "end-to-end (client wall time)" in page and "decode (server timings)" in page
    assert db_import.runs_created == 22


def test_the_leaderboard_filters_by_spec_type_and_sorts(client, measured):
    page = text(client.get("/", {"spec_type": "none", "ordering": "speedup"}))
    assert "tiny-qwen3 · baseline" in page
    assert "draft-simple · self-draft" not in page
    assert client.get("/", {"spec_type": "<script>", "ordering": "nonsense"}).status_code == 200


def test_pages_carry_a_strict_content_security_policy(client, measured):
    response = client.get(f"/configs/{measured.config.key}/")
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert re.search(r"<script>(?!\s*</script>)", response.content.decode()) is None


def test_config_detail_embeds_chart_data_the_command_and_a_table(client, measured):
    response = client.get(f"/configs/{measured.config.key}/")
    page = response.content.decode()

    data = json.loads(
        re.search(r'<script id="tps-data" type="application/json">(.*?)</script>', page).group(1)
    )
    assert data["mean"] == [pytest.approx(102.0)] and data["definition"] == "decode"
    assert 'data-chart-source="tps-data"' in page
    assert "leaderboard/vendor/chart.umd.min.js" in page and "leaderboard/charts.js" in page
    assert (
        '<pre id="server-command">llama-server -m tiny-qwen3.gguf --spec-type draft-simple</pre>'
        in page
    )
    assert 'id="runs-table"' in page and "lossless" in page


def test_the_chart_library_is_served_from_our_static_files(client):
    response = client.get("/static/leaderboard/vendor/chart.umd.min.js")
    assert response.status_code == 200
    assert b"Chart.js v4" in b"".join(response.streaming_content)[:300]


def test_the_submit_form_needs_a_signed_in_user(client, models, hardware):
    response = client.get("/submit/")
    assert response.status_code == 302 and "/accounts/login/" in response.headers["Location"]


def test_the_submit_form_shows_an_inline_error_and_creates_no_job(client, user, models, hardware):
    client.force_login(user)
    form = {
        "hardware": hardware.slug,
        "target_model": "tiny-qwen3.gguf",
        "draft_model": "tiny-dflash.gguf",
        "spec_types": ["draft-dflash"],
        "n_max": "16",
        "protocol": "quick",
        "runs": "3",
        "n_predict": "64",
        "flash_attn": "auto",
        "cache_type_k": "f16",
        "cache_type_v": "f16",
    }
    response = client.post("/submit/", form)
    page = text(response)

    assert response.status_code == 200
    assert re.search(r'id="field-n_max">.*?out of range for draft-dflash', page)
    assert not Job.objects.exists()

    premerge = text(
        client.post(
            "/submit/", form | {"n_max": "8", "draft_model": "tiny-dflash-draft-premerge.gguf"}
        )
    )
    assert re.search(r'id="field-draft_model">.*?pre-merge DFlash file', premerge)


def test_a_valid_form_submission_redirects_to_the_job_page(
    client, user, models, hardware, enqueued
):
    client.force_login(user)
    form = {
        "hardware": hardware.slug, "target_model": "tiny-qwen3.gguf", "draft_model": "tiny-qwen3.gguf",
        "spec_types": ["draft-simple"], "n_max": "4", "protocol": "quick", "runs": "3", "n_predict": "64",
        "warmup": "1", "flash_attn": "auto", "cache_type_k": "f16", "cache_type_v": "f16",
    }  # fmt: skip
    response = client.post("/submit/", form)

    job = Job.objects.get()
    assert response.status_code == 302 and response.headers["Location"] == f"/jobs/{job.pk}/"
    assert job.config.canonical["protocol"]["n_predict"] == 64
    # Its paired baseline is measured in the same run: no automatic baseline job.
    assert not job.auto_scheduled and not job.baseline_jobs.exists()


def test_the_job_page_shows_progress_while_running(client, user, models, hardware, enqueued):
    job = services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    services.record_progress(
        job_id=job.pk, progress={"phase": "measuring", "done": 2, "total": 4, "tokens": 170}
    )
    page = text(client.get(f"/jobs/{job.pk}/"))

    assert 'data-field="status">running' in page
    assert '<progress max="100" value="50"' in page
    assert '<noscript><meta http-equiv="refresh" content="5"></noscript>' in page
    assert "leaderboard/job.js" in page


def test_the_job_page_shows_the_error_and_log_tail_of_a_failure(
    client, user, models, hardware, enqueued
):
    job = services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)
    services.record_failure(
        job_id=job.pk, error="engine crashed: exit code 134", log_tail="GGML_ASSERT(x) failed"
    )
    page = text(client.get(f"/jobs/{job.pk}/"))

    assert "engine crashed: exit code 134" in page and "GGML_ASSERT(x) failed" in page
    assert "http-equiv" not in page


def test_owners_cancel_from_the_job_page(client, user, models, hardware, enqueued):
    job = services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)
    client.force_login(user)
    assert "Cancel job" in text(client.get(f"/jobs/{job.pk}/"))

    response = client.post(f"/jobs/{job.pk}/cancel/")

    job.refresh_from_db()
    assert response.status_code == 302 and job.status == Job.Status.CANCELLED


def test_sign_in_page_renders(db, client):
    # allauth's page reads the sign-in providers configured in the database.
    assert client.get("/accounts/login/").status_code == 200


def test_a_finished_job_page_shows_its_result_and_its_baseline_measured_in_the_same_run(
    client, measured
):
    page = text(client.get(f"/jobs/{measured.pk}/"))

    assert "Result: <strong>102.00</strong> decode tok/s over 2 requests" in page
    assert "acceptance 75.0%" in page
    baseline = measured.config.baseline
    assert f'Paired baseline <a href="/configs/{baseline.key}/">{baseline.label}</a>: ' in page
    assert "measured in the same run as this job" in page
    assert "Paired baseline measured automatically" not in page


def test_a_synthetic_job_page_links_its_automatic_baseline_job_and_back(
    client, user, models, hardware, enqueued, make_result
):
    synthetic = services.submit_config(
        owner=user, data=DRAFT_SIMPLE | {"spec_synth_len": 3.0}, hardware_slug=hardware.slug
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


@pytest.mark.parametrize("path", ["/", "/models/", "/hardware/", "/nmax/", "/context/", "/best/"])
def test_html_pages_answer_head_requests_like_get(client, db, path):
    head, get = client.head(path), client.get(path)
    assert head.status_code == get.status_code == 200
    assert head.content == b"" and head["Content-Type"] == get["Content-Type"]


def test_a_nul_in_the_search_box_is_dropped_not_sent_to_the_database(client, db):
    assert client.get("/", {"q": "a\x00b"}).status_code == 200
