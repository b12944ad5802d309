"""POST /api/v1/imports: a seed-kit leaderboard_runs.csv, imported as self-reported results;
hostile text in its fields stored as escaped data, malformed rows and unreadable files a 400 with
nothing half written, and a file or body too large a 413."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import Config, Hardware
from tests.support.api_clients import HOSTILE_STRINGS, post_csv, row_counts
from tests.support.seed_kit import SEED_CSV, seed_csv


def test_csv_import_needs_a_token_and_fills_the_leaderboard(signed_in, anonymous):
    upload = {
        "file": SimpleUploadedFile("leaderboard_runs.csv", SEED_CSV.read_bytes()),
        "hardware": "RTX PRO 6000",
    }
    assert anonymous.post("/api/v1/imports", upload, format="multipart").status_code == 401

    upload["file"].seek(0)
    response = signed_in.post("/api/v1/imports", upload, format="multipart")

    assert response.status_code == 201, response.json()
    assert (
        response.json()["runs_created"] == 22
        and response.json()["baseline_run_name"] == "qwen3.6-27B"
    )
    board = anonymous.get(
        "/api/v1/leaderboard", {"source": "self-reported", "ordering": "speedup"}
    ).json()
    assert board["count"] == 16
    top = board["results"][0]
    assert top["label"] == "qwen36-dflash-ngram" and top["tps_definition"] == "end-to-end"
    dflash15 = next(r for r in board["results"] if r["label"] == "qwen36-dflash15")
    assert round(dflash15["speedup"], 2) == 3.60 and dflash15["baseline_config_key"]


def test_a_broken_csv_upload_is_400(signed_in):
    upload = {"file": SimpleUploadedFile("x.csv", b"a,b\n1,2\n"), "hardware": "RTX 3090"}
    response = signed_in.post("/api/v1/imports", upload, format="multipart")
    assert response.status_code == 400 and "missing columns" in response.json()["file"][0]


@pytest.mark.parametrize("text", HOSTILE_STRINGS)
def test_hostile_text_in_csv_import_fields_is_stored_escaped(
    signed_in, no_subprocess, settings, text
):
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
        signed_in, content, hardware=text, target_name=text, baseline_run_name=f"{text} baseline"
    )

    assert response.status_code == 201, response.json()
    labels = set(Config.objects.values_list("label", flat=True))
    assert labels == {f"{text} baseline", f"{text} dflash"}
    assert Hardware.objects.get().gpu_name == text.strip()
    assert re.fullmatch(r"[a-z0-9-]+", Hardware.objects.get().slug)
    assert no_subprocess == []
    page = signed_in.get("/")
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
def test_malformed_csv_rows_are_400_and_nothing_is_half_written(signed_in, rows, fragment):
    good = {"run_name": "ok-dflash", "avg_tps": "100"}
    before = row_counts()

    response = post_csv(signed_in, seed_csv([good, *rows]))

    assert response.status_code == 400
    assert fragment in " ".join(response.json()["file"])
    assert row_counts() == before


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe\x00garbage", b"", b"run_name\n", b'run_name,"unterminated\n' + b"x" * 100],
)
def test_unreadable_csv_files_are_400(signed_in, content):
    before = row_counts()
    response = post_csv(signed_in, content)
    assert response.status_code == 400 and response.json()["file"]
    assert row_counts() == before


def test_huge_csv_files_are_413_and_nothing_is_written(signed_in, settings):
    settings.SPECBOARD_MAX_IMPORT_BYTES = 64 * 1024
    before = row_counts()
    content = SEED_CSV.read_bytes() + b"\n" * (65 * 1024)

    response = post_csv(signed_in, content)

    assert response.status_code == 413 and "larger than" in response.json()["file"][0]
    assert row_counts() == before


def test_huge_multipart_bodies_are_413(signed_in, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 32 * 1024
    before = row_counts()
    response = post_csv(signed_in, b"x" * (64 * 1024))
    assert response.status_code == 413 and "detail" in response.json()
    assert row_counts() == before
