"""The seed author's real results file, kept with the tests so that a bare clone can run them.

A copy of `shared/fixtures/seed-repo/leaderboard_runs.csv` (22 runs of Qwen 3.6 27B with and
without DFlash, from the community benchmark this project grew out of).
"""

from pathlib import Path

SEED_CSV = Path(__file__).resolve().parents[1] / "fixtures" / "seed-repo" / "leaderboard_runs.csv"
