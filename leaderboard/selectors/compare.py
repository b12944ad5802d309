"""Comparisons between measurements: do two intervals overlap, and by how much do two rows differ.

It owns the statistics the board and the compare page share: `overlaps` (whether two 95%
intervals share a value, which decides ties with the leader), `welch_difference` and
`entry_difference` (a difference of means with its 95% Welch interval), and `comparison`, the
two to four configs of the compare page side by side with their best rows, overlaid chart data
and each one's difference to the first.
"""

from __future__ import annotations

import math

from leaderboard.models import Config, LeaderboardEntry
from leaderboard.selectors.catalogue import best_entry
from leaderboard.selectors.charts import _depth_points, acceptance_by_position
from runner.stats import t_critical_95


def overlaps(low: float | None, high: float | None, other_low, other_high) -> bool:
    """Whether two 95% intervals share any value; a missing interval overlaps nothing."""
    if None in (low, high, other_low, other_high):
        return False
    return low <= other_high and other_low <= high


def welch_difference(
    *, mean_a: float, stdev_a: float, n_a: int, mean_b: float, stdev_b: float, n_b: int
) -> dict | None:
    """Difference of means a - b with its 95% Welch interval; None when either side has n < 2."""
    if n_a < 2 or n_b < 2 or stdev_a is None or stdev_b is None:
        return None
    var_a, var_b = stdev_a**2 / n_a, stdev_b**2 / n_b
    difference = mean_a - mean_b
    if var_a + var_b == 0:
        return {"difference": difference, "low": difference, "high": difference, "df": None}
    df = (var_a + var_b) ** 2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
    half = t_critical_95(max(1, math.floor(df))) * math.sqrt(var_a + var_b)
    return {"difference": difference, "low": difference - half, "high": difference + half, "df": df}


def entry_difference(*, entry: LeaderboardEntry, reference: LeaderboardEntry) -> dict | None:
    """Two leaderboard rows' tok/s difference (entry - reference) with its 95% Welch interval."""
    return welch_difference(
        mean_a=entry.tokens_per_second,
        stdev_a=entry.stdev,
        n_a=entry.n,
        mean_b=reference.tokens_per_second,
        stdev_b=reference.stdev,
        n_b=reference.n,
    )


def comparison(*, configs: list[Config]) -> dict:
    """Two to four configs side by side: best rows, overlaid chart data, differences to the first."""
    columns = []
    for config in configs:
        entry = best_entry(config=config)
        run = entry.best_run if entry else None
        columns.append(
            {
                "config": config,
                "entry": entry,
                "run": run,
                "acceptance_by_position": acceptance_by_position(run=run),
                "depth_points": _depth_points(run) if run else [],
            }
        )
    reference = columns[0]["entry"]
    for column in columns:
        entry = column["entry"]
        column["difference"] = (
            entry_difference(entry=entry, reference=reference)
            if entry is not None and reference is not None and entry is not reference
            else None
        )
    chart = {
        "labels": [c["config"].label for c in columns],
        "tokens_per_second": [
            c["entry"].tokens_per_second if c["entry"] else None for c in columns
        ],
        "ci95_low": [c["entry"].ci95_low if c["entry"] else None for c in columns],
        "ci95_high": [c["entry"].ci95_high if c["entry"] else None for c in columns],
        "acceptance_by_position": [c["acceptance_by_position"] for c in columns],
        "depths": [
            {
                "depths": [p["input_tokens"] for p in c["depth_points"]],
                "tokens_per_second": [
                    (p.get("decode_tokens_per_second") or {}).get("mean") for p in c["depth_points"]
                ],
            }
            for c in columns
        ],
    }
    has_depths = any(len(c["depth_points"]) >= 2 for c in columns)
    return {"columns": columns, "chart": chart, "has_depths": has_depths}
