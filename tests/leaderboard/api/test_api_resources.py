"""The API's newer resources: registry writes, compare, exports, self-reported uploads, schema."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import get_resolver
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Config, LeaderboardEntry, ModelFile, RequestRecord, Run
from tests.support.baselines import submit_baseline
from tests.support.results import result_file

SPECULATIVE = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


def token_client(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {issue_api_token(user=user, name='tests').key}")
    return api


@pytest.fixture
def client(user) -> APIClient:
    return token_client(user)


@pytest.fixture
def admin(django_user_model) -> APIClient:
    return token_client(django_user_model.objects.create_user(username="root", is_staff=True))


def upload(api: APIClient, result: object, hardware: str = "RTX 4090", **fields: object):
    content = result if isinstance(result, bytes) else json.dumps(result).encode()
    body = {"file": SimpleUploadedFile("result.json", content), "hardware": hardware} | fields
    return api.post("/api/v1/uploads", body, format="multipart")


def test_only_admins_register_models(anonymous, client, admin, db):
    body = {"path": "tiny-qwen3.gguf"}
    assert anonymous.post("/api/v1/models", body, format="json").status_code == 401
    assert client.post("/api/v1/models", body, format="json").status_code == 403
    assert not ModelFile.objects.exists()

    response = admin.post("/api/v1/models", body, format="json")

    assert response.status_code == 201, response.json()
    assert response.json()["name"] == "tiny-qwen3" and response.json()["role"] == "target"
    traversal = admin.post("/api/v1/models", {"path": "../../etc/passwd"}, format="json")
    assert traversal.status_code == 400 and "outside the models directory" in str(traversal.json())
    assert ModelFile.objects.count() == 1


def test_only_admins_retire_builds(
    anonymous, client, admin, models, hardware, user, enqueued, make_result
):
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0, 110.0]))
    assert anonymous.get("/api/v1/builds").json()["results"][0]["release"] == "b11434"

    assert anonymous.post("/api/v1/builds/b11434/retire").status_code == 401
    assert client.post("/api/v1/builds/b11434/retire").status_code == 403
    assert admin.post("/api/v1/builds/b99999/retire").status_code == 404
    assert not LeaderboardEntry.objects.filter(retired=True).exists()

    response = admin.post("/api/v1/builds/b11434/retire", {"note": "bad build"}, format="json")

    assert response.status_code == 200 and response.json()["entries_retired"] == 1
    assert anonymous.get("/api/v1/leaderboard").json()["count"] == 0


def test_compare_gives_welch_interval_of_the_difference(
    anonymous, models, hardware, user, enqueued, make_result
):
    speculative = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    baseline_job = submit_baseline(speculative)
    services.record_result(
        job_id=baseline_job.pk, result=make_result(baseline_job.config.key, [100.0, 102.0, 98.0])
    )
    services.record_result(
        job_id=speculative.pk, result=make_result(speculative.config.key, [150.0, 160.0, 140.0])
    )
    keys = f"{baseline_job.config.key},{speculative.config.key}"

    body = anonymous.get("/api/v1/compare", {"keys": keys}).json()

    difference = body["differences"][0]
    assert difference["difference"] == pytest.approx(50.0)
    # stdevs 2 and 10, n 3 each: se = sqrt(4/3 + 100/3), Welch df = 2.157 (not rounded down to
    # 2), t(0.975, 2.157) = 4.0116.
    assert difference["ci95_low"] == pytest.approx(50.0 - 4.0116 * (104 / 3) ** 0.5, abs=0.01)
    assert difference["ci95_low"] > 0 and difference["degrees_of_freedom"] == pytest.approx(
        2.157, abs=0.01
    )
    assert [c["config"]["key"] for c in body["configs"]] == keys.split(",")
    assert anonymous.get("/api/v1/compare", {"keys": "onlyone"}).status_code == 400
    missing = anonymous.get("/api/v1/compare", {"keys": f"{keys.split(',')[0]},ffffffffffffffff"})
    assert missing.status_code == 404 and "ffffffffffffffff" in missing.json()["keys"][0]


def test_exports_neutralise_formula_cells(client, anonymous):
    rows = [
        {"run_name": '=HYPERLINK("http://evil")', "avg_tps": "70"},
        {"run_name": "+cmd-dflash", "avg_tps": "150"},
        {"run_name": "@SUM(A1)-mtp", "avg_tps": "120"},
    ]
    header = services.SEED_CSV_COLUMNS
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header)
    writer.writeheader()
    for row in rows:
        writer.writerow({c: "" for c in header} | {"runs": "1"} | row)
    body = {
        "file": SimpleUploadedFile("runs.csv", buffer.getvalue().encode()),
        "hardware": "-RTX 3090",
        "baseline_run_name": rows[0]["run_name"],
    }
    assert client.post("/api/v1/imports", body, format="multipart").status_code == 201

    # Imported rows are self-reported: the exports, like the list, give them when asked.
    exported = anonymous.get("/api/v1/exports/leaderboard.csv", {"source": "all"})

    assert exported.status_code == 200 and exported["Content-Type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert {row["label"] for row in table} == {
        '\'=HYPERLINK("http://evil")',
        "'+cmd-dflash",
        "'@SUM(A1)-mtp",
    }
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in table for cell in row.values())
    as_json = anonymous.get("/api/v1/exports/leaderboard.json", {"source": "all"}).json()
    assert {row["label"] for row in as_json} == {row["run_name"] for row in rows}


def test_run_requests_export_as_csv_and_json(
    anonymous, models, hardware, user, enqueued, make_result
):
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    run = services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0, 120.0]))

    table = list(
        csv.DictReader(
            io.StringIO(
                anonymous.get(f"/api/v1/exports/runs/{run.pk}/requests.csv").content.decode()
            )
        )
    )
    rows = anonymous.get(f"/api/v1/exports/runs/{run.pk}/requests.json").json()

    assert [float(r["decode_tokens_per_second"]) for r in table] == [100.0, 120.0]
    assert [r["decode_tokens_per_second"] for r in rows] == [100.0, 120.0]
    assert anonymous.get("/api/v1/exports/runs/999999/requests.csv").status_code == 404


def test_a_result_upload_is_recorded_as_self_reported_apart_from_measured(
    client, anonymous, models, hardware, user, enqueued, make_result
):
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0, 110.0]))
    result = result_file(make_result, SPECULATIVE, [300.0, 310.0, 320.0])

    response = upload(client, result, hardware="NVIDIA H200", publish_name=True)

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["self_reported"] is True and body["hardware"].endswith("-self-reported")
    run = Run.objects.get(pk=body["runs"][0]["id"])
    assert run.self_reported and run.config.self_reported and run.config != job.config
    assert run.requests.count() == 3 and run.provenance["uploaded_by"] == "ada"
    measured = anonymous.get("/api/v1/leaderboard", {"source": "measured"}).json()["results"]
    assert [row["tokens_per_second"] for row in measured] == [pytest.approx(105.0)]
    reported = anonymous.get("/api/v1/leaderboard", {"source": "self-reported"}).json()["results"]
    assert [row["tokens_per_second"] for row in reported] == [pytest.approx(310.0)]
    assert upload(client, result, hardware="NVIDIA H200").status_code == 409
    assert Run.objects.count() == 2


def test_uploads_need_a_token_and_are_throttled(client, anonymous, make_result, settings, db):
    settings.SPECBOARD_IMPORT_RATE = "2/minute"
    result = result_file(make_result, SPECULATIVE, [300.0, 310.0])
    assert upload(anonymous, result).status_code == 401
    codes = [upload(client, result, hardware=f"GPU {i}").status_code for i in range(3)]
    assert codes == [201, 201, 429]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda r: r.pop("summary"), ["summary"]),
        (lambda r: r.update(schema_version=2), ["schema_version"]),
        (lambda r: r.update(requests="many"), ["requests"]),
        (lambda r: r["requests"][0].update(decode_tokens_per_second="fast"), ["requests"]),
        (lambda r: r["requests"][0].update(prompt_n=-1), ["requests"]),
        (lambda r: r["summary"]["decode_tokens_per_second"].update(mean=-5), ["summary"]),
        (lambda r: r.update(config_key="0000000000000000"), ["config_key"]),
        (lambda r: r["config"].update(n_max=99), ["config"]),
        (lambda r: r.update(surprise=1), ["surprise"]),
        (lambda r: r["engine"].update(release=["b1"]), ["engine"]),
    ],
)
def test_wrongly_shaped_uploads_are_400_with_field_messages(client, make_result, db, change, path):
    result = result_file(make_result, SPECULATIVE, [300.0, 310.0])
    change(result)

    response = upload(client, result)

    assert response.status_code == 400
    errors = response.json()["file"]
    for key in path:
        assert key in errors, errors
    assert not Run.objects.exists() and not Config.objects.exists()


@pytest.mark.parametrize(
    "content", [b"{not json", b"[1, 2]", b'{"a": NaN}', b"\xff\xfe", b"[" * 50_000]
)
def test_unreadable_upload_files_are_400(client, db, content):
    response = upload(client, content)
    assert response.status_code == 400 and response.json()["file"]
    assert not Run.objects.exists()


def test_no_url_routes_to_the_worker_result_path():
    """Workers record results through a Celery task on the db queue, never through HTTP."""

    def callbacks(resolver):
        for pattern in resolver.url_patterns:
            if hasattr(pattern, "url_patterns"):
                yield from callbacks(pattern)
            else:
                yield pattern.callback

    forbidden = {services.record_result, services.record_progress, services.record_failure}
    for callback in callbacks(get_resolver()):
        view = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
        assert callback not in forbidden
        if view is not None:
            source = " ".join(
                getattr(getattr(view, name, None), "__qualname__", "") for name in dir(view)
            )
            assert "record_result" not in source and "record_progress" not in source
    import importlib
    import inspect
    import pkgutil

    from leaderboard import api
    from leaderboard.api import views

    modules = [
        importlib.import_module(f"{package.__name__}.{info.name}")
        for package in (api, views)
        for info in pkgutil.iter_modules(package.__path__)
    ]
    assert len(modules) > 8
    for module in modules:
        text = inspect.getsource(module)
        assert "record_result" not in text and "record_progress" not in text
        assert "tasks" not in text.split("import")[0]


def test_the_schema_describes_the_config_fields(anonymous):
    schema = anonymous.get("/api/v1/schema/", {"format": "json"}).json()
    config = schema["components"]["schemas"]["BenchmarkConfig"]

    assert {"target_model", "draft_model", "spec_types", "n_max", "ctx_size", "protocol"} <= set(
        config["properties"]
    )
    assert config["properties"]["n_max"]["maximum"] == 64
    assert "QuickProtocol" in schema["components"]["schemas"]
    assert "const" not in json.dumps(schema) and "$defs" not in json.dumps(schema)
    submission = schema["components"]["schemas"]["SubmissionInputRequest"]
    assert "#/components/schemas/BenchmarkConfig" in json.dumps(submission["properties"]["config"])
    for path in ("/api/v1/uploads", "/api/v1/compare", "/api/v1/exports/leaderboard.csv"):
        assert path in schema["paths"]
    assert "413" in schema["paths"]["/api/v1/submissions"]["post"]["responses"]
    assert "429" in schema["paths"]["/api/v1/uploads"]["post"]["responses"]


def test_request_records_stay_with_their_run(client, make_result, db):
    result = result_file(make_result, SPECULATIVE, [300.0, 310.0])
    assert upload(client, result).status_code == 201
    assert RequestRecord.objects.count() == 2


def test_an_uploaders_name_is_not_published_unless_they_choose(client, make_result, db):
    hidden = upload(client, result_file(make_result, SPECULATIVE, [300.0, 310.0]))
    shown = upload(
        client, result_file(make_result, SPECULATIVE, [200.0, 210.0]), "RTX 3090", publish_name=True
    )

    assert hidden.status_code == shown.status_code == 201
    hidden_run = Run.objects.get(pk=hidden.json()["runs"][0]["id"])
    shown_run = Run.objects.get(pk=shown.json()["runs"][0]["id"])
    assert hidden_run.provenance["uploaded_by"] is None
    assert shown_run.provenance["uploaded_by"] == "ada"
    page = Client().get(f"/runs/{hidden_run.pk}/").content.decode()
    assert "ada" not in page and "name not published" in page
