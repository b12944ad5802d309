"""The seed author's real results file, kept with the tests so that a bare clone can run them.

A copy of `shared/fixtures/seed-repo/leaderboard_runs.csv` (22 runs of Qwen 3.6 27B with and
without DFlash, from the community benchmark this project grew out of).
"""

import csv
import io
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
