"""Results into the database (services.results, one road for every runner result): records that
contradict themselves or physics (runner.evidence) are refused at every door, naming the request
and the figure, and nothing is stored: a GPU host's result (services.record_result, the task's
road), the import service and `manage.py import_runner_results`, an upload (POST
/api/v1/uploads). The stored H200 files still load, their decode figures derived again under the
current convention (runner.stats.decode_rate). (The seed CSV's own check, a row's figures
against its samples, is in test_seed_csv_rules.py.)"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Job, RequestRecord, Run
from runner.evidence import in_current_convention, written_before_the_convention
from runner.stats import decode_rate

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "gpu-results"
DEPTH = RESULTS / "h200-run2" / "8b-dflash15-depth.json"


def _decode_three_times(data: dict) -> None:
    data["requests"][0]["decode_tokens_per_second"] *= 3


def _accepted_all_drafted(data: dict) -> None:
    data["requests"][0]["draft_n_accepted"] = data["requests"][0]["draft_n"]


def _one_millisecond(data: dict) -> None:
    record = data["requests"][0]
    record |= {"wall_ms": 1.0, "end_to_end_tokens_per_second": record["predicted_n"] / 0.001}


def _stated_speedup(data: dict) -> None:
    data["summary"]["speedup"] *= 1.5


# (how the file is tampered, what the refusal says)
CONTRADICTIONS = [
    (_decode_three_times, "requests.0: decode_tokens_per_second is "),
    (
        _accepted_all_drafted,
        "requests.0: accepted_per_position sums to 218, but draft_n_accepted is 526",
    ),
    (_one_millisecond, "requests.0: wall_ms is 1, but the server timed prompt_ms"),
    (_stated_speedup, "summary.speedup is "),
]
IDS = ["decode 3x its timings", "accepted = drafted", "wall 1 ms", "stated speedup"]


def tampered(change) -> dict:
    data = json.loads(DEPTH.read_text())
    change(data)
    return data


def stored_nothing() -> bool:
    return not Run.objects.exists() and not RequestRecord.objects.exists()


@pytest.fixture
def h200(db):
    return services.register_hardware(gpu_name="NVIDIA H200", memory_bytes=141 * 2**30)


@pytest.mark.parametrize(("change", "named"), CONTRADICTIONS, ids=IDS)
def test_a_contradicting_file_is_refused_by_the_import_service_and_stores_nothing(
    h200, user, change, named
):
    with pytest.raises(services.ServiceError) as caught:
        services.import_runner_result(
            owner=user, hardware=h200, result=tampered(change), source="test"
        )
    (message,) = caught.value.errors["result"]
    assert named in message and "\n" not in message
    assert stored_nothing()


@pytest.mark.parametrize(("change", "named"), CONTRADICTIONS, ids=IDS)
def test_a_contradicting_file_is_refused_by_import_runner_results(h200, tmp_path, change, named):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(tampered(change)))
    with pytest.raises(CommandError, match="invalid result") as caught:
        call_command("import_runner_results", str(path), "--hardware", "NVIDIA H200")
    assert named in str(caught.value)
    assert stored_nothing()


@pytest.mark.parametrize(("change", "named"), CONTRADICTIONS, ids=IDS)
def test_a_contradicting_upload_is_refused_with_the_request_and_figure(user, change, named):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {issue_api_token(user=user, name='t').key}")
    body = {
        "file": SimpleUploadedFile("r.json", json.dumps(tampered(change)).encode()),
        "hardware": "RTX 4090",
    }
    response = api.post("/api/v1/uploads", body, format="multipart")
    assert response.status_code == 400, response.json()
    # The API answers the model's errors by top-level field: {"file": {"requests": [...]}}.
    errors = response.json()["file"]
    assert any(named in line for lines in errors.values() for line in lines), errors
    assert stored_nothing()


@pytest.mark.parametrize(("change", "named"), CONTRADICTIONS, ids=IDS)
def test_a_gpu_hosts_contradicting_result_fails_its_job_and_stores_nothing(
    hardware, models, user, change, named
):
    job = services.submit_config(
        owner=user, data={"target_model": "tiny-qwen3.gguf"}, hardware_slug=hardware.slug
    )
    services.record_result(job_id=job.pk, result=tampered(change))
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and named in job.error
    assert stored_nothing()


def test_every_stored_h200_file_still_imports_with_decode_from_its_timings(h200, user):
    paths = [p for p in sorted(RESULTS.rglob("*.json")) if "schema_version" in p.read_text()]
    paths.remove(RESULTS / "h200-run1" / "8b-dflash12-depth.json")  # its engine answered nothing
    for path in paths:
        data = json.loads(path.read_text())
        runs = services.import_runner_result(owner=user, hardware=h200, result=data, source="t")
        current = in_current_convention(data)
        assert runs[-1].decode_mean == pytest.approx(
            current["summary"]["decode_tokens_per_second"]["mean"], rel=1e-12
        )
        if written_before_the_convention(data):
            # (n - 1) / time, not the file's n / time: 255/256 of it at 256 tokens.
            assert runs[-1].decode_mean == pytest.approx(
                data["summary"]["decode_tokens_per_second"]["mean"] * 255 / 256, rel=1e-12
            )
        for record in runs[-1].requests.all():
            assert record.decode_tokens_per_second == decode_rate(
                record.predicted_n, record.predicted_ms
            )


def test_a_tampered_copy_is_refused_but_the_original_file_loads(h200, user):
    data = json.loads(DEPTH.read_text())
    bad = copy.deepcopy(data)
    _decode_three_times(bad)
    with pytest.raises(services.ServiceError):
        services.import_runner_result(owner=user, hardware=h200, result=bad, source="t")
    assert len(services.import_runner_result(owner=user, hardware=h200, result=data, source="t"))
