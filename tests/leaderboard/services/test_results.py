"""Results into the database (services.results, one road for every runner result): records that
contradict themselves or physics (runner.evidence) are refused at every door, naming the request
and the figure, and nothing is stored: a GPU host's result (services.record_result, the task's
road), the import service and `manage.py import_runner_results`, an upload (POST
/api/v1/uploads). The stored H200 files still load, their decode figures derived again under the
current convention (runner.stats.decode_rate), and a paired file imports as its baseline and its
speculative run, once. Derived, not trusted: an upload's lossless is never taken from the file and
its speedup is recomputed from its own baseline section, while a worker's result keeps what its
runner found; runs that answered other prompts get no lossless verdict; a baseline section
measured in the same invocation is stored beside the run and grades its fidelity. (The seed CSV's
own check, a row's figures against its samples, is in test_community_imports.py.)"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Job, LeaderboardEntry, RequestRecord, Run
from runner.config import BenchmarkConfig
from runner.evidence import in_current_convention, written_before_the_convention
from runner.fidelity import NEAR_TIE_MARGIN
from runner.stats import decode_rate
from tests.support.baselines import (
    CPU_FLAGS,
    CUDA_FLAGS,
    DRAFT_SIMPLE,
    NGRAM_MOD,
    diverged,
    on_engine,
    speculative_and_baseline,
    start,
    with_baseline_section,
)
from tests.support.h200_results import (
    CONCURRENCY_FILE,
    CONCURRENCY_LEVELS,
    RESULTS_DIR,
    load_h200_concurrency,
)

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
    paths = [p for p in sorted(RESULTS.glob("h200-*/*.json")) if "schema_version" in p.read_text()]
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


# Runner result files measured outside the queue (the H200 pipeline's output) ---------------


@pytest.fixture
def owner(db):
    return get_user_model().objects.create(username="maintainer")


def test_a_paired_result_imports_as_its_baseline_and_its_speculative_run(h200, owner):
    result = json.loads((RESULTS_DIR / "8b-dflash15-depth.json").read_text())
    runs = services.import_runner_result(owner=owner, hardware=h200, result=result, source="test")
    baseline, dflash = runs
    assert baseline.config.spec_label == "none" and dflash.config.spec_label == "draft-dflash"
    assert dflash.synthetic and not baseline.synthetic
    # Decode derived from the file's timings in the current convention (runner.stats.decode_rate).
    assert dflash.decode_mean == pytest.approx(
        in_current_convention(result)["summary"]["decode_tokens_per_second"]["mean"]
    )
    assert dflash.provenance["source"] == "test"
    entry = LeaderboardEntry.objects.get(config=dflash.config, hardware=h200)
    assert entry.synthetic
    # One speedup definition, board and runner alike: over depths, the geometric mean of the
    # per-depth speedups (2.16 here), not the ratio of means pooled across depths (2.14).
    assert entry.speedup == pytest.approx(result["summary"]["speedup"])
    assert entry.speedup != pytest.approx(dflash.decode_mean / baseline.decode_mean, rel=1e-3)


def test_importing_the_same_file_twice_adds_nothing(h200, owner):
    result = json.loads((RESULTS_DIR / "8b-nmax12.json").read_text())
    services.import_runner_result(owner=owner, hardware=h200, result=result, source="test")
    services.import_runner_result(owner=owner, hardware=h200, result=result, source="test")
    assert Run.objects.count() == 1


def test_a_file_that_is_not_a_runner_result_is_refused(h200, owner):
    with pytest.raises(services.ServiceError):
        services.import_runner_result(
            owner=owner, hardware=h200, result={"rows": []}, source="test"
        )
    assert Run.objects.count() == 0


@pytest.fixture
def h200_concurrency(user, db):
    """The H200's concurrency result (docs/gpu-results/h200-run4): (its hardware kind, [the
    baseline run, the speculative run])."""
    return load_h200_concurrency(owner=user)


def test_the_h200_concurrency_file_is_stored_with_its_baseline(h200_concurrency):
    _, (baseline, speculative) = h200_concurrency
    result = json.loads((RESULTS_DIR / CONCURRENCY_FILE).read_text())

    assert [p["concurrency"] for p in speculative.raw_result["points"]] == CONCURRENCY_LEVELS
    assert speculative.synthetic and speculative.lossless is None and speculative.fidelity == ""
    assert result["summary"]["crossover_concurrency"] == 4
    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert entry.baseline_run == baseline


# Derived, not trusted: an upload's claims against what its sections give ------------------


SPECULATIVE = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


def claiming(result: dict, **claims) -> dict:
    """The result with its summary's pairing fields replaced by claims."""
    return result | {"summary": result["summary"] | claims}


def test_an_upload_claiming_a_speedup_its_sections_do_not_give_is_refused(db, make_result):
    honest = make_result(BenchmarkConfig.model_validate(SPECULATIVE), [390.0, 395.0, 400.0])
    for claims in ({"speedup": 9.0}, {"baseline_decode_tokens_per_second": 44.0}):
        with pytest.raises(services.ServiceError, match="but its points and the baseline's give"):
            services.record_self_reported_result(
                result=claiming(honest, **claims), hardware_name="RTX 4090"
            )
    assert not Run.objects.exists()


def test_an_upload_claiming_lossless_stores_it_unknown(db, make_result):
    honest = make_result(BenchmarkConfig.model_validate(SPECULATIVE), [390.0, 395.0, 400.0])
    result = claiming(honest, lossless=True)

    [run] = services.record_self_reported_result(result=result, hardware_name="RTX 4090")

    run.refresh_from_db()
    assert run.self_reported and run.decode_mean == pytest.approx(395.0)
    assert run.lossless is None and run.speedup is None
    entry = LeaderboardEntry.objects.get(config=run.config)
    assert entry.lossless is None and entry.speedup is None
    # The file is kept as it came, claims included, so what was claimed stays visible.
    assert run.raw_result["summary"]["lossless"] is True


def test_an_uploads_speedup_is_derived_from_its_own_baseline_sections_requests(db):
    result = json.loads((RESULTS_DIR / "8b-dflash15-depth.json").read_text())
    runners_speedup = result["summary"]["speedup"]
    with pytest.raises(services.ServiceError, match="summary.speedup is 50"):
        services.record_self_reported_result(
            result=claiming(result, speedup=50.0), hardware_name="NVIDIA H200"
        )
    result = claiming(result, lossless=True, lossless_note=None)

    baseline, run = services.record_self_reported_result(result=result, hardware_name="NVIDIA H200")

    assert run.speedup == pytest.approx(runners_speedup, rel=1e-12)
    assert Run.objects.get(pk=run.pk).speedup == pytest.approx(2.1589, abs=1e-4)
    assert run.lossless is None and baseline.lossless is None and baseline.speedup is None
    assert run.config.baseline == baseline.config


def test_a_workers_claim_of_lossless_without_outputs_to_compare_is_not_stored(
    user, models, hardware, enqueued, make_result
):
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    # A speedup needs the baseline section it divides by: without one, the runner claims none;
    # lossless is the site's comparison of outputs, and no baseline output is known here.
    result = claiming(make_result(job.config.key, [100.0, 110.0]), lossless=True)

    run = services.record_result(job_id=job.pk, result=result)

    run.refresh_from_db()
    assert run.lossless is None and run.speedup is None
    assert not run.self_reported
    assert LeaderboardEntry.objects.get(config=job.config).lossless is None


def test_an_upload_whose_summary_disagrees_with_its_requests_stores_nothing(db, make_result):
    honest = make_result(BenchmarkConfig.model_validate(SPECULATIVE), [390.0, 395.0, 400.0])
    result = claiming(
        honest,
        lossless=True,
        decode_tokens_per_second=honest["summary"]["decode_tokens_per_second"] | {"mean": 5000.0},
    )

    with pytest.raises(services.ServiceError) as refused:
        services.record_self_reported_result(result=result, hardware_name="RTX 4090")

    [message] = refused.value.errors["result"]
    assert "summary.decode_tokens_per_second.mean is 5000" in message and "give 395" in message
    assert not Run.objects.exists() and not LeaderboardEntry.objects.exists()


# Lossless only between runs that answered the same prompts -------------------------------


def prompts(*labels: str) -> list[str]:
    return [hashlib.sha256(label.encode()).hexdigest() for label in labels]


def with_prompts(result: dict, hashes: list[str]) -> dict:
    for record, prompt in zip(result["requests"], hashes, strict=True):
        record["prompt_sha256"] = prompt
    return result


@pytest.fixture
def jobs(user, models, hardware, enqueued) -> tuple[Job, Job]:
    """An n-gram job and its paired baseline, submitted separately, both started."""
    return speculative_and_baseline(user, hardware, data=NGRAM_MOD, started=True)


def test_runs_that_answered_other_prompts_get_no_lossless_verdict(jobs, make_result):
    speculative, baseline = jobs
    same_output = ["a", "b"]
    services.record_result(
        job_id=baseline.pk,
        result=with_prompts(
            make_result(baseline.config.key, [50.0, 50.0], outputs=same_output), prompts("t", "t")
        ),
    )
    services.record_result(
        job_id=speculative.pk,
        result=with_prompts(
            make_result(speculative.config.key, [90.0, 95.0], outputs=same_output),
            prompts("varied-1", "varied-2"),
        ),
    )

    assert Run.objects.get(job=speculative).lossless is None


def test_runs_that_answered_the_same_prompts_are_compared(jobs, make_result):
    speculative, baseline = jobs
    services.record_result(
        job_id=baseline.pk,
        result=with_prompts(
            make_result(baseline.config.key, [50.0, 50.0], outputs=["a", "b"]), prompts("p", "q")
        ),
    )
    services.record_result(
        job_id=speculative.pk,
        result=with_prompts(
            make_result(speculative.config.key, [90.0, 95.0], outputs=["a", "c"]), prompts("p", "q")
        ),
    )

    assert Run.objects.get(job=speculative).lossless is False


# A baseline section measured in the same runner invocation, and the fidelity grade ---------


@pytest.fixture
def speculative(user, models, hardware, enqueued) -> Job:
    return services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)


def near_tie_result(config: Job, make_result, *, backend: str) -> dict:
    """A result whose second request (of the three its config plans) flipped one near tie from
    the baseline measured beside it, on an engine of this backend."""
    flags = CPU_FLAGS if backend == "cpu" else CUDA_FLAGS
    return with_baseline_section(
        on_engine(
            diverged(
                make_result(config.config.key, [150.0, 155.0, 160.0], outputs=["a", "b", "d"]),
                None,
                "near tie",
                None,
            ),
            backend=backend,
            flags=flags,
        ),
        make_result(config.config.baseline.key, [50.0, 51.0, 52.0], outputs=["a", "c", "d"]),
    )


def test_both_sections_are_stored_and_the_run_is_graded(speculative, make_result, client: Client):
    baseline_config = speculative.config.baseline
    start(speculative)
    # The margin threshold was measured on the CPU backend (runner.fidelity).
    result = near_tie_result(speculative, make_result, backend="cpu")

    run = services.record_result(job_id=speculative.pk, result=result)

    assert run is not None and run.fidelity == "near ties only"
    beside = Run.objects.get(config=baseline_config, job__isnull=True)
    assert beside.provenance["measured_with_job"] == speculative.pk
    assert beside.n == 3 and beside.decode_mean == pytest.approx(51.0)
    # The row pairs with the baseline measured beside it and shows the verdict.
    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert entry.fidelity == "near ties only"
    assert entry.speedup == pytest.approx(155.0 / 51.0)
    assert LeaderboardEntry.objects.get(config=baseline_config).runs_count == 1
    page = client.get("/").content.decode()
    assert "near ties only" in page and ">not lossless<" not in page
    # The badge's tooltip names the grade's threshold.
    assert f"margin below {NEAR_TIE_MARGIN} nats" in page


def test_a_near_tie_on_a_backend_whose_margin_floor_was_not_measured_is_unclassified(
    speculative, make_result, client: Client
):
    start(speculative)

    run = services.record_result(
        job_id=speculative.pk, result=near_tie_result(speculative, make_result, backend="cuda")
    )

    # The file's grade says "near ties only"; the site does not call a CUDA flip a near tie
    # until the noise floor is measured there, and the outputs differ: not lossless either.
    run.refresh_from_db()
    assert (run.fidelity, run.lossless) == ("unclassified", False)
    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert (entry.fidelity, entry.lossless) == ("unclassified", False)
    for path in ("/", f"/runs/{run.pk}/", f"/configs/{speculative.config.key}/"):
        page = client.get(path).content.decode()
        assert "near ties only" not in page, path
        assert ">lossless<" not in page, path
    assert "diverged (unclassified)" in client.get("/").content.decode()


def test_a_result_without_a_baseline_section_is_not_graded(speculative, make_result):
    start(speculative)
    result = diverged(make_result(speculative.config.key, [150.0, 150.0, 150.0]), None, None, None)

    run = services.record_result(job_id=speculative.pk, result=result)

    assert run.fidelity == ""
    assert LeaderboardEntry.objects.get(config=speculative.config).fidelity == ""
