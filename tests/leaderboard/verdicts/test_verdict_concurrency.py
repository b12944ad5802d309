"""Concurrency verdicts: each level against the baseline's by Welch on its rounds, and the
crossover as a level interval with its uncertainty."""

from __future__ import annotations

import json
from pathlib import Path

from leaderboard.verdicts.concurrency import crossover_text, level_verdicts

H200 = Path(__file__).resolve().parents[3] / "docs/gpu-results/h200-run4/call1"


def point(level: int, mean: float, stdev: float, n: int = 3) -> dict:
    return {
        "concurrency": level,
        "aggregate_tokens_per_second": {"mean": mean, "stdev": stdev, "n": n},
    }


def test_the_crossover_lies_between_the_last_clearly_faster_and_first_clearly_slower_level():
    own = [point(1, 150, 2), point(2, 250, 3), point(4, 390, 15), point(8, 500, 4)]
    base = [point(1, 100, 2), point(2, 200, 3), point(4, 400, 3), point(8, 700, 4)]
    verdicts = level_verdicts(own, base)
    assert [v.verdict for v in verdicts] == ["faster", "faster", "not established", "slower"]
    assert crossover_text(own, base) == "between 2 and 8"


def test_a_level_the_rounds_cannot_tell_leaves_the_crossover_not_established():
    own = [point(1, 150, 2), point(2, 198, 30)]
    base = [point(1, 100, 2), point(2, 200, 30)]
    assert crossover_text(own, base) == "not established"


def test_every_level_clearly_faster_means_no_crossover_within_the_levels():
    own = [point(1, 150, 2), point(4, 450, 2)]
    base = [point(1, 100, 2), point(4, 400, 2)]
    assert crossover_text(own, base) == "not within 1–4"


def test_slower_from_the_lowest_level_on_is_at_or_below_it():
    own = [point(1, 80, 2), point(2, 150, 2)]
    base = [point(1, 100, 2), point(2, 200, 2)]
    assert crossover_text(own, base) == "at or below 1"


def test_the_stored_h200_concurrency_file_gives_its_crossover_with_its_uncertainty():
    result = json.loads((H200 / "8b-dflash12-concurrency.json").read_text())
    verdicts = {v.level: v for v in level_verdicts(result["points"], result["baseline"]["points"])}
    # Level 4: 443.0 against 459.2 tok/s over three rounds each, Welch p = 0.38: not established,
    # though the runner's point estimate put the crossover there.
    assert round(verdicts[4].p, 2) == 0.38 and verdicts[4].verdict == "not established"
    assert result["summary"]["crossover_concurrency"] == 4
    assert crossover_text(result["points"], result["baseline"]["points"]) == "between 2 and 8"
