"""Ranks and ties within one ranking (`verdicts.workloads.ranking_key`).

A rank is a position in the order of point estimates, the usual competition rank (one more
than the rows with a higher figure): a faster row never carries a worse number than a slower
one. Whether a row can be told apart from the leader and from the row above is a separate label,
from Welch's test on the config samples (`verdicts.uncertainty`); it never moves a rank. A row
without spread (one request) keeps its place and says that it has no interval (the label is
unknown, None). Only rows that compete are ranked: measured on a good build, real weights, not
degenerate, and speculative (a baseline is the denominator, shown apart).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.verdicts.statistics import Sample, indistinguishable

# What keeps a row off every ranking (LeaderboardEntry's flags).
KEPT_OFF_FLAGS = ("synthetic", "self_reported", "degenerate", "retired", "test_weights")


@dataclass(frozen=True)
class Contender:
    """A row as a ranking sees it: its id, its figure and its config's sample."""

    id: int
    figure: float
    sample: Sample | None


@dataclass(frozen=True)
class Standing:
    """A row's place: its rank and whether it is indistinguishable from the leader and from the
    row above (None where the test cannot be made; the leader is neither)."""

    rank: int
    like_leader: bool | None
    like_above: bool | None


def standings(contenders: Sequence[Contender]) -> dict[int, Standing]:
    """Every contender's standing, fastest first (an equal figure shares the rank)."""
    ordered = sorted(contenders, key=lambda c: (-c.figure, c.id))
    found: dict[int, Standing] = {}
    rank = 1
    for index, row in enumerate(ordered):
        if index == 0:
            found[row.id] = Standing(rank=1, like_leader=None, like_above=None)
            continue
        # Fastest first: a row slower than the one above it is behind every row before it
        # (its rank is one more than their number); an equal figure shares the rank above.
        if row.figure != ordered[index - 1].figure:
            rank = index + 1
        found[row.id] = Standing(
            rank=rank,
            like_leader=indistinguishable(row.sample, ordered[0].sample),
            like_above=indistinguishable(row.sample, ordered[index - 1].sample),
        )
    return found


def competes(row: object) -> bool:
    """Whether a leaderboard row takes part in its ranking (see the module's rule)."""
    if any(getattr(row, flag) for flag in KEPT_OFF_FLAGS):
        return False
    return row.config.spec_label != "none"  # type: ignore[attr-defined]
