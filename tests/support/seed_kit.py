"""The seed author's real results file, kept with the tests so that a bare clone can run them, and
kit files of the tests' own rows.

A copy of `shared/fixtures/seed-repo/leaderboard_runs.csv` (22 runs of Qwen 3.6 27B with and
without DFlash, from the community benchmark this project grew out of).
"""

import csv
import io
import json
import math
from pathlib import Path

from leaderboard.services import SEED_CSV_COLUMNS

SEED_CSV = Path(__file__).resolve().parents[1] / "fixtures" / "seed-repo" / "leaderboard_runs.csv"


def seed_csv(rows: list[dict], *, defaults: dict | None = None) -> bytes:
    """A seed-kit CSV of these rows; unnamed columns are empty, `defaults` fill the rest."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SEED_CSV_COLUMNS)
    writer.writeheader()
    for row in rows:
        writer.writerow({c: "" for c in SEED_CSV_COLUMNS} | (defaults or {"runs": "1"}) | row)
    return buffer.getvalue().encode()


# Every row seed_csv_with_samples writes has two samples, so each run has an interval.
ROWS_WITH_SAMPLES = {"runs": "2", "samples": "[99.0, 101.0]", "sample_tokens": "[700, 710]"}


def seed_csv_with_samples(rows: list[dict]) -> bytes:
    """The rows as a kit file of two-sample rows; a row without samples gets two around its own
    avg_tps, so that its figures are its samples' (the import refuses a mean that is not)."""
    shaped = []
    for row in rows:
        try:
            mean = float(row.get("avg_tps", ""))
        except ValueError:
            mean = math.nan
        own = {"samples": json.dumps([mean - 1, mean + 1])} if math.isfinite(mean) else {}
        shaped.append(ROWS_WITH_SAMPLES | own | row)
    return seed_csv(shaped, defaults=ROWS_WITH_SAMPLES)
