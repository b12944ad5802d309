"""manage.py refresh_leaderboard: every row's verdicts recomputed, as after an upgrade."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from leaderboard.models import LeaderboardEntry
from tests.support.seed_kit import SEED_CSV


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_refresh_leaderboard_fills_the_verdicts_of_rows_stored_before_them(db):
    call_command("import_seed_csv", str(SEED_CSV), "--hardware", "RTX PRO 6000")
    # As migration 0015 leaves rows written before it: no ranking, no config interval.
    LeaderboardEntry.objects.update(ranking_key="", ranking_label="", config_n=0, interval_basis="")
    output = run("refresh_leaderboard")

    assert "recomputed 16 leaderboard rows" in output
    ngram = LeaderboardEntry.objects.get(config__label="qwen36-dflash-ngram")
    assert ngram.ranking_key and "seed kit CSV" in ngram.ranking_label
    # Seven batches of ten requests: the config's estimate is a random-effects one over their
    # seven means, which Welch's test reads at their 63 within-batch degrees of freedom (n 64).
    assert ngram.interval_basis == "batch means" and ngram.config_n == 64
    assert ngram.config_ci95_low < ngram.config_mean < ngram.config_ci95_high
