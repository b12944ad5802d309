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

from leaderboard.verdicts.statistics import Sample, indistinguishable_pairs

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
    if not ordered:
        return {}
    # Each row against the leader and against the row above, one Welch test per pair, asked
    # of all of them at once.
    pairs = []
    for row, above in zip(ordered[1:], ordered[:-1], strict=True):
        pairs += [(row.sample, ordered[0].sample), (row.sample, above.sample)]
    likes = indistinguishable_pairs(pairs)
    found = {ordered[0].id: Standing(rank=1, like_leader=None, like_above=None)}
    rank = 1
    for index in range(1, len(ordered)):
        row = ordered[index]
        # Fastest first: a row slower than the one above it is behind every row before it
        # (its rank is one more than their number); an equal figure shares the rank above.
        if row.figure != ordered[index - 1].figure:
            rank = index + 1
        found[row.id] = Standing(
            rank=rank, like_leader=likes[2 * index - 2], like_above=likes[2 * index - 1]
        )
    return found


def competes(row: object) -> bool:
    """Whether a leaderboard row takes part in its ranking (see the module's rule)."""
    if any(getattr(row, flag) for flag in KEPT_OFF_FLAGS):
        return False
    return row.config.spec_label != "none"  # type: ignore[attr-defined]
