"""Hostile and malformed input: each gets a clear 4xx, nothing executes, nothing half-written."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Config, Hardware, Job, LeaderboardEntry, RequestRecord, Run
from tests.support.seed_kit import SEED_CSV, seed_csv

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}
HOSTILE_STRINGS = [
    "<script>alert(1)</script>",
    "$(touch /tmp/specboard-pwned)",
    "`reboot`; rm -rf / && echo",
    "../../etc/passwd",
    "a|b>c<d&e;f",
]


def row_counts() -> dict[str, int]:
    models = (Config, Hardware, Job, LeaderboardEntry, RequestRecord, Run)
    return {model.__name__: model.objects.count() for model in models}


@pytest.fixture
def client(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {issue_api_token(user=user, name='tests').key}")
    return api


@pytest.fixture
def no_subprocess(monkeypatch: pytest.MonkeyPatch) -> list:
    """Fails loudly if anything tries to start a process while a request is handled."""
    started: list = []

    def refuse(*args, **kwargs):
        started.append(args)
        raise AssertionError(f"a process was started: {args!r}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr("os.system", refuse)
    return started


def submit(client: APIClient, body) -> object:
    return client.post("/api/v1/submissions", body, format="json")


def post_csv(client: APIClient, content: bytes, **fields):
    body = {"file": SimpleUploadedFile("runs.csv", content), "hardware": "RTX 3090"} | fields
    return client.post("/api/v1/imports", body, format="multipart")


@pytest.mark.parametrize(
    "raw",
    [
        "{not json",
        '{"config": ',
        '{"config": {"target_model": NaN}}',
        '{"config": Infinity}',
        '"\\ud800"',
        "[" * 100_000,
        "\x00\x01\x02",
    ],
)
def test_malformed_json_is_400(client, models, hardware, raw):
    before = row_counts()
    response = client.generic("POST", "/api/v1/submissions", raw, content_type="application/json")
    assert response.status_code == 400 and "detail" in response.json()
    assert row_counts() == before


@pytest.mark.parametrize(
    ("config_changes", "field"),
    [
        ({"n_max": 0}, "n_max"),
        ({"n_max": 65}, "n_max"),
        ({"n_max": "eight"}, "n_max"),
        ({"n_max": 2**70}, "n_max"),
        ({"ctx_size": 10}, "ctx_size"),
        ({"ctx_size": 10**9}, "ctx_size"),
        # The tiny target was trained on 4096 tokens of context.
        ({"ctx_size": 8192}, "ctx_size"),
        ({"target_model": "unregistered.gguf"}, "target_model"),
        ({"target_model": "../../etc/passwd"}, "target_model"),
        ({"target_model": "/etc/passwd.gguf"}, "target_model"),
        ({"target_model": "../outside/x.gguf"}, "target_model"),
        ({"draft_model": ["tiny-dflash.gguf"]}, "draft_model"),
        ({"spec_types": {"a": 1}}, "spec_types"),
        ({"protocol": {"name": "quick", "runs": -1}}, "protocol.quick.runs"),
        ({"protocol": "quick"}, "protocol"),
        ({"cache_type_k": "q8_0; rm -rf /"}, "cache_type_k"),
    ],
)
def test_out_of_range_and_wrongly_typed_configs_are_400_with_the_field(
    client, models, hardware, enqueued, no_subprocess, config_changes, field
):
    before = row_counts()
    response = submit(client, {"hardware": hardware.slug, "config": CONFIG | config_changes})

    assert response.status_code == 400
    assert field in response.json()["config"], response.json()
    assert row_counts() == before and enqueued == []


@pytest.mark.parametrize("text", HOSTILE_STRINGS)
def test_hostile_text_in_every_submission_field_is_refused_and_nothing_runs(
    client, models, hardware, enqueued, no_subprocess, text
):
    before = row_counts()
    bodies = [
        {"hardware": text, "config": CONFIG},
        {"hardware": hardware.slug, "config": CONFIG | {"target_model": text}},
        {"hardware": hardware.slug, "config": CONFIG | {"draft_model": text}},
        {"hardware": hardware.slug, "config": CONFIG | {"spec_types": [text]}},
        {"hardware": hardware.slug, "config": CONFIG | {"flash_attn": text}},
        {"hardware": hardware.slug, "config": CONFIG | {text: 1}},
    ]
    for body in bodies:
        response = submit(client, body)
        assert response.status_code == 400, (body, response.json())
    assert row_counts() == before and enqueued == [] and no_subprocess == []


@pytest.mark.parametrize("text", HOSTILE_STRINGS)
def test_hostile_prompt_is_stored_as_inert_data(
    client, models, hardware, enqueued, no_subprocess, text
):
    protocol = {"name": "quick", "n_predict": 64, "runs": 3, "prompt": text}
    response = submit(
        client, {"hardware": hardware.slug, "config": CONFIG | {"protocol": protocol}}
    )

    assert response.status_code == 201
    job = Job.objects.get(pk=response.json()["id"])
    assert job.config.canonical["protocol"]["prompt"] == text
    assert no_subprocess == []
    page = client.get(f"/configs/{job.config.key}/")
    if page.status_code == 200 and text.startswith("<"):
        assert b"<script>alert(1)</script>" not in page.content


@pytest.mark.parametrize("text", HOSTILE_STRINGS)
def test_hostile_text_in_csv_import_fields_is_stored_escaped(client, no_subprocess, settings, text):
    settings.SPECBOARD_IMPORT_RATE = "1000/minute"
    content = seed_csv(
        [
            {
                "run_name": f"{text} baseline",
                "avg_tps": "70",
                "model": text,
                "prompt_preview": text,
            },
            {"run_name": f"{text} dflash", "avg_tps": "140"},
        ]
    )
    response = post_csv(
        client, content, hardware=text, target_name=text, baseline_run_name=f"{text} baseline"
    )

    assert response.status_code == 201, response.json()
    labels = set(Config.objects.values_list("label", flat=True))
    assert labels == {f"{text} baseline", f"{text} dflash"}
    assert Hardware.objects.get().gpu_name == text.strip()
    assert re.fullmatch(r"[a-z0-9-]+", Hardware.objects.get().slug)
    assert no_subprocess == []
    page = client.get("/")
    assert b"<script>alert(1)</script>" not in page.content


@pytest.mark.parametrize(
    ("rows", "fragment"),
    [
        ([{"run_name": "base", "avg_tps": "fast"}], "avg_tps must be a number"),
        ([{"run_name": "base", "avg_tps": "-5"}], "finite, positive"),
        ([{"run_name": "base", "avg_tps": "inf"}], "finite, positive"),
        ([{"run_name": "", "avg_tps": "70"}], "run_name is empty"),
        ([{"run_name": "base", "avg_tps": "70", "samples": "=cmd|'/C calc'!A0"}], "samples"),
        (
            [{"run_name": "base", "avg_tps": "70", "draft_tokens": "1", "draft_accepted": "5"}],
            "draft_accepted",
        ),
    ],
)
def test_malformed_csv_rows_are_400_and_nothing_is_half_written(client, rows, fragment):
    good = {"run_name": "ok-dflash", "avg_tps": "100"}
    before = row_counts()

    response = post_csv(client, seed_csv([good, *rows]))

    assert response.status_code == 400
    assert fragment in " ".join(response.json()["file"])
    assert row_counts() == before


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe\x00garbage", b"", b"run_name\n", b'run_name,"unterminated\n' + b"x" * 100],
)
def test_unreadable_csv_files_are_400(client, content):
    before = row_counts()
    response = post_csv(client, content)
    assert response.status_code == 400 and response.json()["file"]
    assert row_counts() == before


def test_huge_csv_files_are_413_and_nothing_is_written(client, settings):
    settings.SPECBOARD_MAX_IMPORT_BYTES = 64 * 1024
    before = row_counts()
    content = SEED_CSV.read_bytes() + b"\n" * (65 * 1024)

    response = post_csv(client, content)

    assert response.status_code == 413 and "larger than" in response.json()["file"][0]
    assert row_counts() == before


def test_huge_json_bodies_are_413(client, models, hardware, settings):
    before = row_counts()
    protocol = {"name": "quick", "prompt": "x" * (settings.SPECBOARD_MAX_JSON_BYTES + 10)}
    response = submit(
        client, {"hardware": hardware.slug, "config": CONFIG | {"protocol": protocol}}
    )
    assert response.status_code == 413 and "detail" in response.json()
    assert row_counts() == before


def test_huge_multipart_bodies_are_413(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 32 * 1024
    before = row_counts()
    response = post_csv(client, b"x" * (64 * 1024))
    assert response.status_code == 413 and "detail" in response.json()
    assert row_counts() == before


def test_huge_result_uploads_are_413(client, settings):
    settings.SPECBOARD_MAX_IMPORT_BYTES = 1024
    body = {"file": SimpleUploadedFile("r.json", b" " * 4096 + b"{}"), "hardware": "RTX 4090"}
    response = client.post("/api/v1/uploads", body, format="multipart")
    assert response.status_code == 413 and not Run.objects.exists()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/configs/..%2F..%2Fetc%2Fpasswd",
        "/api/v1/configs/../../etc/passwd",
        "/api/v1/runs/99999999999999999999999",
        "/api/v1/jobs/-1",
        "/api/v1/exports/runs/1/../../../etc/passwd",
        "/api/v1/no/such/thing",
    ],
)
def test_path_traversal_and_odd_paths_are_json_404s(client, db, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")


@pytest.mark.parametrize(
    "query",
    [
        {"ordering": "-id; DROP TABLE leaderboard_run"},
        {"protocol": "<script>"},
        {"include_retired": "maybe"},
        {"target": "x" * 5000},
        {"target": "a\x00b"},
    ],
)
def test_bad_leaderboard_queries_are_400(client, db, query):
    response = client.get("/api/v1/leaderboard", query)
    assert response.status_code == 400 and response.json()


def test_invalid_tokens_are_401_as_json(db):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Token ' OR 1=1 --")
    response = api.get("/api/v1/leaderboard")
    assert response.status_code == 401 and "detail" in response.json()


def test_unexpected_errors_are_json_and_logged(client, db, monkeypatch, caplog):
    def explode(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(services, "import_leaderboard_csv", explode)
    client.raise_request_exception = False
    response = post_csv(client, SEED_CSV.read_bytes())

    assert response.status_code == 500
    assert response.json() == {"detail": "An unexpected error occurred; it has been logged."}
    assert "boom" in caplog.text


def test_no_code_reaches_a_shell():
    """Only argument lists reach subprocesses: no shell=True, os.system or os.popen anywhere."""
    pattern = re.compile(r"shell\s*=\s*True|os\.system\(|os\.popen\(|commands\.getoutput")
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("leaderboard", "runner", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
