"""Comparisons between measurements: by how much two rows differ, and configs side by side.

It owns `welch_difference` and `entry_difference` (a difference of means with its 95% Welch
interval) and `comparison`, the two to four configs of the compare page side by side with their
best rows, overlaid chart data, each depth's figures and each one's difference to the first.
How two intervals lie (ties and "beats") is `selectors.intervals`.
"""

from __future__ import annotations

import math

from leaderboard import verdicts
from leaderboard.models import Config, LeaderboardEntry
from leaderboard.selectors.catalogue import best_entry
from leaderboard.selectors.charts import _depth_points, acceptance_by_position
from leaderboard.selectors.definitions import row_definitions, row_evidence


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
    # Welch's degrees of freedom as they are, not rounded down (scipy's t takes any df).
    half = verdicts.t_critical(max(1.0, df)) * math.sqrt(var_a + var_b)
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


def _one_measurement(column: dict) -> bool:
    return column["entry"] is not None and not column["evidence"]["depths"]


def comparison(*, configs: list[Config]) -> dict:
    """Two to four configs side by side: best rows, overlaid chart data, differences to the first."""
    columns = []
    entries = [best_entry(config=config) for config in configs]
    evidence = row_evidence(entries=[entry for entry in entries if entry is not None])
    for config, entry in zip(configs, entries, strict=True):
        run = entry.best_run if entry else None
        found = evidence.get(entry.pk) if entry else None
        columns.append(
            {
                "config": config,
                "entry": entry,
                "run": run,
                "evidence": found,
                "definitions": row_definitions(entry, found) if entry else {},
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
        # A depth run's interval pools requests of different lengths: not drawn as one band.
        "ci95_low": [c["entry"].ci95_low if _one_measurement(c) else None for c in columns],
        "ci95_high": [c["entry"].ci95_high if _one_measurement(c) else None for c in columns],
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
