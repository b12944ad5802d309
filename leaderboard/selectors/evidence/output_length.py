"""Reads for the output-length protocol: per output length each side's decode tok/s, the speedup
with its 95% interval and its verdict (`verdicts.output_length`), as the config page's table and
its "speedup against output length" chart (`output_length_view`), and as plain data for the API.
Stored results are read through their typed view (`leaderboard.stored_results`) and the
helpers in `selectors.evidence.protocols`.
"""

from __future__ import annotations

from leaderboard.models import LeaderboardEntry
from leaderboard.selectors.evidence.definitions import baseline_run_id
from leaderboard.selectors.evidence.protocols import _reference_points
from leaderboard.stored_results import StoredResult, stored_results
from leaderboard.verdicts.output_length import length_verdicts
from leaderboard.verdicts.workloads import OUTPUT_LENGTH


def output_length_rows(points: object, baseline_points: object = None) -> list[dict]:
    """Per output length: tokens asked and generated, requests, both sides' decode means, the
    speedup, its 95% interval and the verdict (faster / slower / not established)."""
    rows = []
    for found in length_verdicts(points, baseline_points):
        interval = found.speedup_interval
        rows.append(
            {
                "output_tokens": found.output_tokens,
                "generated_tokens": found.generated_tokens,
                "requests": found.requests,
                "decode": found.decode,
                "baseline_decode": found.baseline_decode,
                "baseline_requests": found.baseline_requests,
                "speedup": found.speedup,
                "ci95_low": interval[0] if interval else None,
                "ci95_high": interval[1] if interval else None,
                "verdict": found.verdict,
            }
        )
    return rows


def output_length_chart(rows: list[dict], *, label: str) -> dict:
    """The chart's data: one line of speedups against the tokens generated at each length (the
    length asked where no figure says what was generated), with whiskers and verdicts."""
    shown = [row for row in rows if row["speedup"] is not None]
    return {
        "label": label,
        "lengths": [row["generated_tokens"] or row["output_tokens"] for row in shown],
        "asked": [row["output_tokens"] for row in shown],
        "speedup": [row["speedup"] for row in shown],
        "ci95_low": [row["ci95_low"] for row in shown],
        "ci95_high": [row["ci95_high"] for row in shown],
        "verdicts": [row["verdict"] for row in shown],
    }


def output_length_view(*, entry: LeaderboardEntry | None) -> dict | None:
    """An output-length config's best row: its rows per length against its paired baseline and
    the chart's data; None for a row of another protocol or one without output-length points."""
    if entry is None or entry.config.protocol != OUTPUT_LENGTH:
        return None
    # The points alone: a length's figures are the stored points', never read from requests.
    stored = stored_results([entry.best_run_id, baseline_run_id(entry)])
    own = stored.get(entry.best_run_id or 0) or StoredResult()
    reference = _reference_points(entry, stored) if entry.config.is_speculative else []
    rows = output_length_rows(list(own.points), reference)
    if not rows:
        return None
    chart = output_length_chart(rows, label=entry.config.label)
    # Every request generated what it asked for (the runner forces the length).
    forced = all(
        row["generated_tokens"] is not None and row["generated_tokens"] == row["output_tokens"]
        for row in rows
    )
    return {
        "rows": rows,
        "chart": chart,
        "has_baseline": any(row["baseline_decode"] is not None for row in rows),
        "has_chart": bool(chart["speedup"]),
        "forced": forced,
    }
