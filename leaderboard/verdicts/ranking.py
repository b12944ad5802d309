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

import numpy as np

from leaderboard.verdicts.statistics import Sample, SampleColumns, indistinguishable_columns

# What keeps a row off every ranking (LeaderboardEntry's flags).
KEPT_OFF_FLAGS = (
    "synthetic",
    "self_reported",
    "degenerate",
    "retired",
    "test_weights",
    # Its own baseline disagrees with the site's (`verdicts.baselines`).
    "baseline_disputed",
)


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
    found = standing_columns(
        ids=[c.id for c in contenders],
        figures=[c.figure for c in contenders],
        samples=SampleColumns.of_samples([c.sample for c in contenders]),
    )
    return {id: Standing(*standing) for id, standing in found.items()}


def standing_columns(
    *, ids: Sequence[int], figures: Sequence[float], samples: SampleColumns
) -> dict[int, tuple[int, bool | None, bool | None]]:
    """`standings` of rows given as columns (their ids, figures and config samples), each as
    (rank, like_leader, like_above): a ranking's rows are decided this way on every run
    recorded in it."""
    if not len(ids):
        return {}
    id_column = np.array(ids, dtype=np.int64)
    figure_column = np.array(figures, dtype=np.float64)
    order = np.lexsort((id_column, -figure_column))
    ordered = figure_column[order]
    # Fastest first: a row slower than the one above it is behind every row before it (its
    # rank is one more than their number); an equal figure shares the rank above.
    first_of_figure = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    ranks = np.maximum.accumulate(np.where(first_of_figure, np.arange(1, len(order) + 1), 0))
    # Each row against the leader and against the row above, one Welch test per pair, asked of
    # all of them at once.
    ordered_samples = samples.take(order)
    rest = np.arange(1, len(order))
    like_leader = indistinguishable_columns(
        ordered_samples.take(rest), ordered_samples.take(np.zeros_like(rest))
    )
    like_above = indistinguishable_columns(
        ordered_samples.take(rest), ordered_samples.take(rest - 1)
    )
    ordered_ids = id_column[order].tolist()
    found: dict[int, tuple[int, bool | None, bool | None]] = {ordered_ids[0]: (1, None, None)}
    for index, (id, rank) in enumerate(zip(ordered_ids[1:], ranks[1:].tolist(), strict=True)):
        found[id] = (rank, like_leader[index], like_above[index])
    return found


def competes(row: object) -> bool:
    """Whether a leaderboard row takes part in its ranking (see the module's rule)."""
    return competes_as(
        kept_off=[getattr(row, flag) for flag in KEPT_OFF_FLAGS],
        spec_label=row.config.spec_label,  # type: ignore[attr-defined]
    )


def competes_as(*, kept_off: Sequence[object], spec_label: str) -> bool:
    """`competes` of a row given as values: its KEPT_OFF_FLAGS, in order, and its config's spec
    label."""
    return not any(kept_off) and spec_label != "none"
