"""Every road into the site asks the door (runner.door) once, before anything is stored: a GPU
host's result, `manage.py import_runner_results` (import_runner_result) and an upload, through
the service and the API. A file that breaks one rule is refused on each with the rule named, and
nothing of it reaches a page or the API; the honest file and a real H200 file still go in."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from leaderboard import services
from leaderboard.models import Config, Hardware, Job, LeaderboardEntry, ModelFile, Run
from runner.config import BenchmarkConfig
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
