"""A plan's requests and a paired run's rounds over them.

Each protocol plans its own requests (``plan`` on its class, in its module); ``plan_requests``
asks the config's. The concurrency protocol's plan is waves of requests sent at once, which
``waves`` groups a plan back into; every other protocol's requests go one at a time.
``repeated_prompt`` says, from the records' prompt hashes, whether an n-gram result was still
measured on a repeated prompt (runner.protocols.quick says why that matters).

A paired run (a config and its baseline in one invocation) splits each stage's measured requests
into rounds (``split_rounds``, ``PAIRED_ROUNDS`` of them by default) whose sides run in ABBA order
(``round_orders``), so that a drift of clocks or power over the run falls on both sides alike;
``runner.benchmark`` runs them and records the order. What a plan costs in tokens is
``runner.protocols.budget``'s business.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import TYPE_CHECKING, Any, Literal

from runner.protocols.base import RequestSpec

if TYPE_CHECKING:
    # Only a type here: runner.config imports the protocols from this package.
    from runner.config import BenchmarkConfig


def waves(plan: Sequence[RequestSpec]) -> list[list[RequestSpec]]:
    """The plan as the groups sent at once: one wave per concurrency round, else one request."""
    grouped: list[list[RequestSpec]] = []
    for key, specs in groupby(plan, key=lambda s: (s.phase, s.point, s.round, s.concurrency)):
        if key[3] is None:
            grouped += [[spec] for spec in specs]
        else:
            grouped.append(list(specs))
    return grouped


# How many rounds a paired run splits each stage's measured requests into by default: AB then BA.
PAIRED_ROUNDS = 2

Side = Literal["speculative", "baseline"]


def round_orders(rounds: int) -> list[tuple[Side, Side]]:
    """Which side runs first in each of ``rounds`` rounds: alternating (ABBA...), and always
    ending on the baseline, whose engine, still loaded, then takes the margins where the two
    outputs diverged (runner.fidelity). Two rounds are baseline, speculative | speculative,
    baseline; one is speculative, baseline (the order before rounds)."""
    return [
        ("baseline", "speculative") if (rounds - 1 - number) % 2 else ("speculative", "baseline")
        for number in range(rounds)
    ]


def baseline_sessions(rounds: int) -> int:
    """How many engine sessions the baseline takes over ``rounds`` rounds in ``round_orders``:
    a side's adjacent turns (ABBA's middle pair) share one session."""
    turns = [side for order in round_orders(rounds) for side in order]
    return sum(1 for side, _ in groupby(turns) if side == "baseline")


def split_rounds(specs: Sequence[RequestSpec], rounds: int) -> list[list[int]]:
    """Each round's measured requests, as indices among ``specs``' measured ones in plan order.

    Every point's (depth's, level's, category's) measured waves are split into ``rounds``
    consecutive runs, the earlier ones one wave longer where they do not divide evenly, so each
    point is measured in every round it has requests for; rounds left empty are dropped.
    """
    if rounds < 1:
        raise ValueError("a paired run needs at least one round")
    chunks: list[list[int]] = [[] for _ in range(rounds)]
    for point_waves in _measured_waves_by_point(specs).values():
        for number, run in enumerate(_consecutive_runs(point_waves, rounds)):
            chunks[number] += [i for wave in run for i in wave]
    return [sorted(chunk) for chunk in chunks if chunk]


def _measured_waves_by_point(specs: Sequence[RequestSpec]) -> dict[int, list[list[int]]]:
    """Each point's measured waves, as indices among ``specs``' measured ones in plan order."""
    per_point: dict[int, list[list[int]]] = {}
    index = 0
    for wave in waves(specs):
        if wave[0].phase != "measure":
            continue
        per_point.setdefault(wave[0].point, []).append(list(range(index, index + len(wave))))
        index += len(wave)
    return per_point


def _consecutive_runs(items: list[list[int]], rounds: int) -> list[list[list[int]]]:
    """``items`` split into ``rounds`` consecutive runs, the earlier ones one longer where they
    do not divide evenly."""
    size, extra = divmod(len(items), rounds)
    runs: list[list[list[int]]] = []
    start = 0
    for number in range(rounds):
        end = start + size + (number < extra)
        runs.append(items[start:end])
        start = end
    return runs


def plan_requests(config: BenchmarkConfig, *, vocab_size: int) -> list[RequestSpec]:
    """Every request of the config's protocol in order, warm-ups first at each point."""
    return config.protocol.plan(config, vocab_size=vocab_size)


def repeated_prompt(config: BenchmarkConfig, requests: Sequence[Mapping[str, Any]]) -> bool | None:
    """For an n-gram config: whether two measured requests shared a prompt (the n-gram state
    could have learned the answer); None for other configs, or records without prompt hashes."""
    if not config.learns_across_requests:
        return None
    hashes = [record.get("prompt_sha256") for record in requests]
    if not hashes or None in hashes:
        return None
    return len(set(hashes)) < len(hashes)
