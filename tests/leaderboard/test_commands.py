"""Management commands: import_seed_csv (alias import_runs), import_runner_results (alias
import_results), create_api_token, register_hardware (one GPU or several; seed_demo: test_seed_demo.py)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from leaderboard.accounts.models import ApiToken, key_digest
from leaderboard.models import LeaderboardEntry
from tests.support.fake_nvml import FakeNvml, install, rtx_3090s
from tests.support.seed_kit import SEED_CSV


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_import_seed_csv_reads_the_seed_csv(db):
    output = run("import_seed_csv", str(SEED_CSV), "--hardware", "RTX PRO 6000 Blackwell 96GB")

    assert "imported 22 runs" in output and "baseline qwen3.6-27B" in output
    assert LeaderboardEntry.objects.count() == 16
    with pytest.raises(CommandError):
        run("import_seed_csv", str(SEED_CSV), "--hardware", "x", "--baseline", "no-such-run")


def test_the_old_import_command_names_still_work(db, tmp_path):
    output = run("import_runs", str(SEED_CSV), "--hardware", "RTX PRO 6000 Blackwell 96GB")
    assert "imported 22 runs" in output
    with pytest.raises(CommandError, match="Expecting value"):
        bad = tmp_path / "bad.json"
        bad.write_text("not json")
        run("import_results", str(bad), "--hardware", "NVIDIA H200")


def test_create_api_token_prints_a_new_key_each_time_and_stores_only_its_hash(db):
    with pytest.raises(CommandError):
        run("create_api_token", "nobody")
    first = run("create_api_token", "ci-bot", "--create").strip()
    second = run("create_api_token", "ci-bot").strip()
    assert first != second
    stored = set(ApiToken.objects.values_list("key_sha256", flat=True))
    assert stored == {key_digest(first), key_digest(second)}


def test_register_hardware_names_the_queue(db):
    assert (
        run("register_hardware", "NVIDIA H200", "--memory-gib", "141").strip()
        == "h200-141gb\tgpu.h200-141gb"
    )


def test_register_hardware_takes_a_gpu_count_or_this_hosts_gpus(db, monkeypatch):
    assert (
        run("register_hardware", "RTX 3090", "--memory-gib", "24", "--gpu-count", "2").strip()
        == "2x-rtx-3090-24gb\tgpu.2x-rtx-3090-24gb"
    )
    install(monkeypatch, FakeNvml(rtx_3090s(2)))
    assert (
        run("register_hardware", "--this-host").strip() == "2x-rtx-3090-24gb\tgpu.2x-rtx-3090-24gb"
    )
    install(monkeypatch, FakeNvml([]))
    with pytest.raises(CommandError, match="no GPU"):
        run("register_hardware", "--this-host")
    with pytest.raises(CommandError, match="1 to 16 GPUs"):
        run("register_hardware", "RTX 3090", "--gpu-count", "0")


def test_refresh_leaderboard_fills_the_verdicts_of_rows_stored_before_them(db):
    call_command("import_seed_csv", str(SEED_CSV), "--hardware", "RTX PRO 6000")
    # As migration 0015 leaves rows written before it: no ranking, no config interval.
    LeaderboardEntry.objects.update(ranking_key="", ranking_label="", config_n=0, interval_basis="")
    output = run("refresh_leaderboard")

    assert "recomputed 16 leaderboard rows" in output
    ngram = LeaderboardEntry.objects.get(config__label="qwen36-dflash-ngram")
    assert ngram.ranking_key and "seed kit CSV" in ngram.ranking_label
    # Seven batches: the config's interval is over their seven means.
    assert ngram.interval_basis == "batch means" and ngram.config_n == 7
