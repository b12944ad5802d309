"""The quality protocol's figures as the pages and the API show them, read from a stored
result: the run's accuracy, its paired baseline's, their difference with its interval and
verdict (``verdicts.quality_change``), and the scored tasks.

A stored result passed the door (``runner.evidence`` scored every task again), so these are
read, never recomputed, except the baseline's accuracy, which the pair counts give. Anything
malformed reads as no figure, never an error.
"""

from __future__ import annotations

from typing import Any

from leaderboard import verdicts
from leaderboard.stored_results import StoredSection
from runner.stats import wilson_interval

QUALITY_DEFINITION = (
    "accuracy: the share of the quality protocol's generated tasks (arithmetic, word problems, "
    "string and list operations, JSON fields, the output of small Python programs; every "
    "answer computed by the project) answered exactly, with greedy decoding: the output's first "
    "line, stripped, one trailing full stop dropped, must equal the expected answer; with the "
    "Wilson 95% interval over tasks. Difference: the config's accuracy minus its paired "
    "baseline's on the same tasks in the same run, with Newcombe's paired 95% interval and "
    "McNemar's exact p-value"
)
PAIR_COUNTS = ("pairs", "both_correct", "only_speculative_correct", "only_baseline_correct")


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _accuracy(correct: int, tasks: int) -> dict[str, Any]:
    low, high = wilson_interval(correct, tasks)
    return {"tasks": tasks, "correct": correct, "accuracy": correct / tasks, "ci95": [low, high]}


def _difference(paired: dict) -> dict[str, Any] | None:
    """The paired baseline's accuracy and the difference, as the pages show them; None where
    the pair counts do not add up or the difference is not a number."""
    pairs, both, _, only_baseline = (_count(paired.get(name)) for name in PAIR_COUNTS)
    difference = verdicts.finite(paired.get("difference"))
    if not pairs or both is None or only_baseline is None or difference is None:
        return None
    if both + only_baseline > pairs:
        return None
    low, high = paired.get("ci95_low"), paired.get("ci95_high")
    bounds = [verdicts.finite(low), verdicts.finite(high)]
    return {
        "baseline": _accuracy(both + only_baseline, pairs),
        "difference": {
            "value": difference,
            "ci95": bounds,
            # The same in percentage points, as the pages say it.
            "points": difference * 100,
            "ci95_points": [None if b is None else b * 100 for b in bounds],
            "mcnemar_p": verdicts.finite(paired.get("mcnemar_p")),
            "pairs": pairs,
            "only_speculative_correct": _count(paired.get("only_speculative_correct")),
            "only_baseline_correct": only_baseline,
            "verdict": verdicts.quality_change(low, high),
        },
    }


def quality_view(stored: StoredSection) -> dict[str, Any] | None:
    """{"accuracy", "baseline" (None unpaired), "difference" (None unpaired), "definition"} of a
    stored result's summary; None where it has no quality figures (another protocol)."""
    own = stored.quality
    if own is None:
        return None
    tasks, correct = _count(own.get("tasks")), _count(own.get("correct"))
    if not tasks or correct is None or correct > tasks:
        return None
    paired = stored.quality_difference
    found = _difference(paired) if paired is not None else None
    return {
        "accuracy": _accuracy(correct, tasks),
        "baseline": found["baseline"] if found else None,
        "difference": found["difference"] if found else None,
        "definition": QUALITY_DEFINITION,
    }


# What the API shows of each scored task, as the runner's score names it.
TASK_FIELDS = ("task_id", "kind", "expected", "extracted", "correct")


def quality_tasks_of(stored: StoredSection) -> list[dict[str, Any]] | None:
    """Each measured request's scored task of a stored result (index, task id, kind, expected
    and extracted answers, correct), in order; None where it has none."""
    tasks = [
        {"index": index} | {name: score.get(name) for name in TASK_FIELDS}
        for index, score in stored.quality_scores
    ]
    return tasks or None
