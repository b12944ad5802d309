"""The engine sessions of a run, in the order they run: the ABBA schedule of a paired run.

Unpaired, each stage (``stages``: one per concurrency level, else the whole plan) is one
session. Paired, each stage's measured requests are split into rounds
(``protocols.split_rounds``) whose sides run in ABBA order (``protocols.round_orders``), so a
drift of clocks or power over the run falls on both sides. Each round of each side is its own
engine session, started and stopped, never two engines at once: a session's peak memory is
sampled for its own process (MemorySampler falls back to the whole device's memory where NVML
hides other processes), so only one process alive keeps each side's peak its own, and a pair
that fits one engine at a time needs no room for two. The cost is a model load and the warm-ups
again per session, so the turns of a side that meet (ABBA's middle pair) share one session: two
rounds are baseline, speculative, baseline: the speculative side is measured in one session as
it always was, and the baseline loads twice. The baseline's turn always ends a stage, so its
last session takes the margins against the speculative outputs (``runner.fidelity``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter

from runner import protocols
from runner.config import BenchmarkConfig
from runner.protocols import ConcurrencyProtocol
from runner.results import PairedRound


@dataclass(frozen=True)
class Session:
    """One engine session of a run: its side, slots, what it sends (warm-ups first, in plan
    order) and which of the run's measured requests those are."""

    side: protocols.Side
    slots: int
    plan: list[protocols.RequestSpec]
    measured: list[int]
    # On a stage's last baseline session of a graded pair: every measured request of the stage,
    # whose margins it takes once the speculative side has measured them all.
    margin_indices: list[int] | None = None


@dataclass(frozen=True)
class Schedule:
    """A run's sessions in the order they run, and a paired run's rounds (None unpaired)."""

    sessions: list[Session]
    rounds: list[PairedRound] | None

    @property
    def requests(self) -> int:
        """Every request the sessions send, warm-ups included (the progress total)."""
        return sum(len(session.plan) for session in self.sessions)


def stages(
    config: BenchmarkConfig, plan: list[protocols.RequestSpec]
) -> list[tuple[int, list[protocols.RequestSpec]]]:
    """(slots, requests) of each engine session: one per concurrency level, with that many slots,
    else one session of one slot for the whole plan."""
    if not isinstance(config.protocol, ConcurrencyProtocol):
        return [(1, plan)]
    return [
        (level, [spec for spec in plan if spec.point == index])
        for index, level in enumerate(config.protocol.levels)
    ]


def schedule(
    config: BenchmarkConfig,
    plan: list[protocols.RequestSpec],
    *,
    paired: bool,
    graded: bool,
    rounds: int,
) -> Schedule:
    """The run's engine sessions in the order they run, and a paired run's rounds."""
    sessions: list[Session] = []
    orders: list[PairedRound] = []
    levels = isinstance(config.protocol, ConcurrencyProtocol)
    offset = 0
    for slots, stage in stages(config, plan):
        count = sum(spec.phase == "measure" for spec in stage)
        if paired:
            stage_sessions, stage_rounds = _paired_stage(
                stage, slots=slots, offset=offset, rounds=rounds, concurrency=levels
            )
            if graded:
                last = stage_sessions[-1]
                margins = list(range(offset, offset + count))
                stage_sessions[-1] = dataclasses.replace(last, margin_indices=margins)
            sessions += stage_sessions
            orders += stage_rounds
        else:
            sessions.append(
                Session("speculative", slots, stage, list(range(offset, offset + count)))
            )
        offset += count
    return Schedule(sessions, orders if paired else None)


def _paired_stage(
    stage: list[protocols.RequestSpec], *, slots: int, offset: int, rounds: int, concurrency: bool
) -> tuple[list[Session], list[PairedRound]]:
    """One stage's sessions and rounds, ABBA: a side's turns that meet share one session."""
    chunks = protocols.split_rounds(stage, rounds)
    orders = protocols.round_orders(len(chunks))
    paired = [
        PairedRound(
            round=number,
            concurrency=slots if concurrency else None,
            order=list(order),
            request_indices=[offset + index for index in chunk],
        )
        for number, (chunk, order) in enumerate(zip(chunks, orders, strict=True))
    ]
    turns = [(side, chunk) for chunk, order in zip(chunks, orders, strict=True) for side in order]
    sessions = []
    for side, group in groupby(turns, key=itemgetter(0)):
        chosen = {index for _, chunk in group for index in chunk}
        measured = sorted(offset + index for index in chosen)
        sessions.append(Session(side, slots, session_plan(stage, chosen), measured))
    return sessions, paired


def session_plan(
    stage: list[protocols.RequestSpec], chosen: set[int]
) -> list[protocols.RequestSpec]:
    """A stage's warm-ups and its chosen measured requests (indices among its measured), in
    plan order: every session warms up before it measures."""
    kept = []
    index = 0
    for spec in stage:
        if spec.phase == "measure":
            if index in chosen:
                kept.append(spec)
            index += 1
        else:
            kept.append(spec)
    return kept
