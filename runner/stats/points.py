"""The points of a protocol (``depth_points``): per depth (one for the quick and the quality
protocol), per concurrency level (with each round's aggregate throughput: all its generated
tokens over its wall time, the wall time of its slowest request, since a wave's requests are sent
together) or per prompt category, each with its decode summary, acceptance, tau and latency."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runner.config import BenchmarkConfig
from runner.protocols import (
    CategoriesProtocol,
    ConcurrencyProtocol,
    QualityProtocol,
    QuickProtocol,
)
from runner.stats.latency import latency_figures
from runner.stats.pooled import acceptance_and_tau
from runner.stats.summaries import summarize

# A point's fields that only a concurrency level or a category fills (None elsewhere).
LABELLED_POINT_FIELDS = ("concurrency", "aggregate_tokens_per_second", "ttft_ms", "category")
# A point's fields that only the output-length protocol fills (runner.protocols.output_length): set, and
# null, on every other point, so that the runner's result sets every field it has.
OUTPUT_LENGTH_POINT_FIELDS = ("generated_tokens", "speedup_ci95_low", "speedup_ci95_high")


def round_throughputs(records: Sequence[Mapping[str, Any]]) -> list[float]:
    """Per concurrency round (records grouped by their ``round``): every token the round's
    requests generated over the round's wall time, its slowest request's client wall time."""
    rounds: dict[int, list[Mapping[str, Any]]] = {}
    for record in records:
        rounds.setdefault(record["round"], []).append(record)
    throughputs = []
    for wave in (rounds[index] for index in sorted(rounds)):
        wall_s = max(record["wall_ms"] for record in wave) / 1000.0
        if wall_s > 0:
            throughputs.append(sum(record["predicted_n"] for record in wave) / wall_s)
    return throughputs


def concurrency_figures(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A concurrency level's own figures: aggregate tok/s over its rounds, time to first token."""
    return {
        "aggregate_tokens_per_second": summarize(round_throughputs(records)),
        "ttft_ms": summarize([r["ttft_ms"] for r in records if r["ttft_ms"] is not None]),
    }


def depth_points(
    config: BenchmarkConfig, records: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The points of a protocol: per depth (one for the quick protocol), per concurrency level
    or per category; speedup left None."""
    protocol = config.protocol
    if isinstance(protocol, ConcurrencyProtocol | CategoriesProtocol):
        return _labelled_points(protocol, records)
    specs: list[tuple[int, int | None, int]]
    if isinstance(protocol, QuickProtocol):
        specs = [(0, None, protocol.n_predict)]
    elif isinstance(protocol, QualityProtocol):
        # Every task at one point: the tasks' own figure is the accuracy, not a point's.
        specs = [(0, None, protocol.max_tokens)]
    else:
        specs = [(i, p.input_tokens, p.output_tokens) for i, p in enumerate(protocol.points)]
    points = []
    for index, input_tokens, output_tokens in specs:
        mine = [r for r in records if r["point"] == index]
        acceptance_rate, tau = acceptance_and_tau(mine)
        points.append(
            {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "decode_tokens_per_second": summarize(
                    [r["decode_tokens_per_second"] for r in mine if r["decode_tokens_per_second"]]
                ),
                "acceptance_rate": acceptance_rate,
                "tau": tau,
                "speedup": None,
            }
            | dict.fromkeys(LABELLED_POINT_FIELDS)
            | dict.fromkeys(OUTPUT_LENGTH_POINT_FIELDS)
            | {"latency": latency_figures(mine)}
        )
    return points


def _labelled_points(
    protocol: ConcurrencyProtocol | CategoriesProtocol, records: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    points = []
    labels: list[int] | list[str] = (
        protocol.levels if isinstance(protocol, ConcurrencyProtocol) else protocol.categories
    )
    for index, label in enumerate(labels):
        mine = [r for r in records if r["point"] == index]
        acceptance_rate, tau = acceptance_and_tau(mine)
        point: dict[str, Any] = {
            "input_tokens": None,
            "output_tokens": protocol.output_tokens,
            "decode_tokens_per_second": summarize(
                [r["decode_tokens_per_second"] for r in mine if r["decode_tokens_per_second"]]
            ),
            "acceptance_rate": acceptance_rate,
            "tau": tau,
            "speedup": None,
        } | dict.fromkeys(LABELLED_POINT_FIELDS)
        point["latency"] = latency_figures(mine)
        point |= dict.fromkeys(OUTPUT_LENGTH_POINT_FIELDS)
        if isinstance(protocol, ConcurrencyProtocol):
            # Suite prompts are text of their own lengths: no one input length to state.
            length = None if protocol.suite_pool else protocol.input_tokens
            point |= {"input_tokens": length, "concurrency": label}
            point |= concurrency_figures(mine)
        else:
            point["category"] = label
        points.append(point)
    return points
