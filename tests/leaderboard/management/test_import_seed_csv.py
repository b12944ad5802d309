"""manage.py import_seed_csv (and its old name, import_runs): a seed kit's leaderboard_runs.csv
recorded as self-reported runs, one leaderboard row a config."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from leaderboard.models import LeaderboardEntry
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


def test_the_old_name_import_runs_still_works(db):
    output = run("import_runs", str(SEED_CSV), "--hardware", "RTX PRO 6000 Blackwell 96GB")
    assert "imported 22 runs" in output
