"""POST /api/v1/imports: a seed-kit leaderboard_runs.csv, imported as self-reported results."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from tests.support.seed_kit import SEED_CSV


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
