"""Whether a draft changed the answers: the verdict on a quality run's paired accuracy difference.

The runner scores the config and its paired baseline on the same generated tasks in one run
(``runner.protocols.quality``) and gives the difference of their accuracies with Newcombe's paired 95%
interval (``runner.stats.paired_difference_interval``). A change is shown only where that
interval leaves out 0; otherwise the run cannot tell the two apart, however far the two
accuracies look.
"""

from __future__ import annotations

from leaderboard.verdicts.statistics import finite

FEWER_CORRECT = "fewer correct"
MORE_CORRECT = "more correct"
NO_CHANGE_SHOWN = "no change shown"


def quality_change(ci95_low: object, ci95_high: object) -> str | None:
    """FEWER_CORRECT where the whole interval of (config - baseline) accuracy lies below 0,
    MORE_CORRECT where it lies above, NO_CHANGE_SHOWN where it holds 0; None without one."""
    low, high = finite(ci95_low), finite(ci95_high)
    if low is None or high is None or low > high:
        return None
    if high < 0:
        return FEWER_CORRECT
    if low > 0:
        return MORE_CORRECT
    return NO_CHANGE_SHOWN
