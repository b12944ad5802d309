"""Every road into the site asks the door (runner.door) once, before anything is stored: a GPU
host's result, `manage.py import_runner_results` (import_runner_result) and an upload, through
the service and the API. A file that breaks one rule is refused on each with the rule named, and
nothing of it reaches a page or the API; the honest file and a real H200 file still go in."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import CommandError, call_command

from leaderboard import services
from leaderboard.models import Config, Hardware, Job, LeaderboardEntry, ModelFile, Run
from leaderboard.services.results import door_refusal
from runner.config import BenchmarkConfig
from runner.results import load_result
from tests.support.api_clients import upload
from tests.support.baselines import start
from tests.support.door_files import CONFIG, RULES, TARGET, door_file
from tests.support.h200_results import RESULTS_DIR, load_h200_results

PAGES = ("/", "/best/", "/nmax/")


@pytest.fixture
def models_dir(tiny_models):
    return next(iter(tiny_models.values())).parent


def shows_nothing(client, anonymous, *, source: str) -> bool:
    """Whether no page and no API list shows a row, a run or the crafted file's target."""
    pages = [client.get(path) for path in PAGES]
    listed = anonymous.get("/api/v1/leaderboard", {"source": source}).json()["results"]
    runs = anonymous.get("/api/v1/runs").json()["results"]
    return (
        all(page.status_code == 200 for page in pages)
        and not any("qwen3-27b" in page.content.decode() for page in pages)
        and listed == []
        and runs == []
        and not LeaderboardEntry.objects.exists()
    )


@pytest.mark.parametrize("rule", RULES)
def test_import_refuses_the_file_naming_the_rule_and_stores_nothing(
    rule, user, hardware, models_dir, client, anonymous
):
    with pytest.raises(services.ServiceError, match=rf"^result: {rule}: "):
        services.import_runner_result(
            owner=user, hardware=hardware, result=door_file(rule, models_dir=models_dir), source="t"
        )

    assert not Run.objects.exists() and not Job.objects.exists()
    assert not ModelFile.objects.filter(sha256=TARGET["sha256"]).exists()
    assert shows_nothing(client, anonymous, source="measured")


@pytest.mark.parametrize("rule", RULES)
def test_the_management_command_refuses_the_file_naming_the_rule(rule, user, models_dir, tmp_path):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(door_file(rule, models_dir=models_dir)))

    with pytest.raises(CommandError, match=rule):
        call_command("import_runner_results", str(path), "--hardware", "NVIDIA H200")

    assert not Run.objects.exists()


@pytest.mark.parametrize("rule", RULES)
def test_a_hosts_result_breaking_a_rule_fails_its_job_with_the_rule(
    rule, user, models, hardware, enqueued, models_dir, client, anonymous
):
    job = services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)
    start(job)
    config = BenchmarkConfig.from_canonical(job.config.canonical)

    run = services.record_result(
        job_id=job.pk, result=door_file(rule, models_dir=models_dir, config=config)
    )

    job.refresh_from_db()
    assert run is None and job.status == Job.Status.FAILED and job.error.startswith(f"{rule}: ")
    assert shows_nothing(client, anonymous, source="measured")


@pytest.mark.parametrize("rule", RULES)
def test_an_upload_breaking_a_rule_is_400_naming_it_and_stores_nothing(
    rule, signed_in, models_dir, client, anonymous
):
    response = upload(signed_in, door_file(rule, models_dir=models_dir), hardware="NVIDIA H200")

    assert response.status_code == 400 and rule in json.dumps(response.json())
    assert not Run.objects.exists() and not Config.objects.exists()
    assert not Hardware.objects.filter(self_reported=True).exists()
    assert shows_nothing(client, anonymous, source="self-reported")


def test_the_honest_file_goes_in_on_every_road(
    user, models, hardware, enqueued, models_dir, signed_in, anonymous
):
    honest = door_file(None, models_dir=models_dir)

    imported = services.import_runner_result(
        owner=user, hardware=hardware, result=honest, source="t"
    )
    uploaded = upload(signed_in, honest, hardware="NVIDIA H200")

    assert len(imported) == 1 and uploaded.status_code == 201, uploaded.json()
    listed = anonymous.get("/api/v1/leaderboard", {"source": "measured"}).json()["results"]
    assert [row["tokens_per_second"] for row in listed] == [pytest.approx(50.0)]


def test_real_h200_files_still_import_and_keep_their_test_weights_mark(user, hardware, anonymous):
    runs = load_h200_results(owner=user, hardware=hardware, files=("27b-dflash15-depth.json",))
    marked = json.loads((RESULTS_DIR / "../h200-run8/8b-dflash8-output-length.json").read_text())
    assert marked["provenance"]["models"]["target"]["test_weights"] is True

    services.import_runner_result(owner=user, hardware=hardware, result=marked, source="t")

    assert len(runs) == 2  # The baseline measured beside it, and the DFlash run.
    listed = anonymous.get("/api/v1/leaderboard", {"source": "measured"}).json()["results"]
    # Both 27B rows (the DFlash one synthetic, so kept off the ranking as always) and both 8B.
    assert sorted("27b" in row["target_name"] for row in listed) == [False, False, True, True]
    target = ModelFile.objects.get(sha256=marked["provenance"]["models"]["target"]["sha256"])
    assert target.test_weights is True
    assert all(
        entry.test_weights for entry in LeaderboardEntry.objects.filter(config__target=target)
    )


EPYC = "AMD EPYC 9654 96-Core Processor"
XEON = "Intel(R) Xeon(R) Platinum 8480+"


def on_cpu(result: dict, cpu: str) -> dict:
    """The result as if its host had no GPU and this CPU."""
    result["provenance"]["system"] = {"cpu": cpu}
    return result


@pytest.fixture
def cpu_kind(db):
    """A CPU host's kind registered from its machine, with its CPU model."""
    return services.register_hardware(gpu_name="CPU lab", cpu_model=EPYC)


def test_a_result_of_another_cpu_model_is_refused_on_a_cpu_kind_on_every_road(
    user, models, cpu_kind, enqueued, models_dir, client, anonymous
):
    xeon = on_cpu(door_file(None, models_dir=models_dir), XEON)
    job = services.submit_config(owner=user, data=CONFIG, hardware_slug=cpu_kind.slug)
    start(job)

    with pytest.raises(services.ServiceError) as refused:
        services.import_runner_result(owner=user, hardware=cpu_kind, result=xeon, source="t")
    services.record_result(job_id=job.pk, result=xeon)

    expected = (
        f"provenance.system_mismatch: the file ran on {XEON} with no GPU, but it is recorded "
        f"under CPU lab, a CPU host of {EPYC}"
    )
    assert refused.value.errors == {"result": [expected]}
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.error == expected
    assert shows_nothing(client, anonymous, source="measured")
    # The kind's own CPU passes the door.
    epyc = on_cpu(door_file(None, models_dir=models_dir), EPYC)
    assert door_refusal(load_result(epyc), hardware=cpu_kind) is None


def test_a_kind_named_alone_keeps_the_cpu_of_its_first_result_and_refuses_another(
    user, models_dir, tmp_path
):
    first, second = tmp_path / "epyc.json", tmp_path / "xeon.json"
    first.write_text(json.dumps(on_cpu(door_file(None, models_dir=models_dir), EPYC)))
    second.write_text(json.dumps(on_cpu(door_file(None, models_dir=models_dir), XEON)))

    call_command("import_runner_results", str(first), "--hardware", "CPU lab")
    assert Hardware.objects.get(gpu_name="CPU lab").cpu_model == EPYC
    expected = f"the file ran on {XEON} with no GPU, but it is recorded under CPU lab, a CPU host of {EPYC}"
    with pytest.raises(CommandError, match=re.escape(expected)):
        call_command("import_runner_results", str(second), "--hardware", "CPU lab")

    assert Run.objects.count() == 1


def test_an_uploads_kind_keeps_the_cpu_of_its_first_file_and_refuses_another(signed_in, models_dir):
    epyc = on_cpu(door_file(None, models_dir=models_dir), EPYC)
    xeon = on_cpu(door_file(None, models_dir=models_dir), XEON)

    assert upload(signed_in, epyc, hardware="My desktop").status_code == 201
    refused = upload(signed_in, xeon, hardware="My desktop")

    assert refused.status_code == 400 and "a CPU host of AMD EPYC 9654" in json.dumps(
        refused.json()
    )
    kind = Hardware.objects.get(self_reported=True)
    assert kind.cpu_model == EPYC and Run.objects.filter(hardware=kind).count() == 1
