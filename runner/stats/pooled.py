"""What a section's measured requests pool to: the decode rate of one request (``decode_rate``:
(predicted_n - 1) tokens over predicted_ms, the convention of llama-bench's tg, which the runner
measures with and ``runner.evidence`` checks and re-derives stored results with), the pooled
acceptance rate and tau, whether output degenerated (``is_degenerate``, which the service calls on
uploaded records too), and the figures of a section's summary that its records decide
(``pooled_figures``)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from runner.stats.summaries import summarize

# A median distinct-4-gram ratio below this marks output that collapsed into repetition.
DEGENERATE_DISTINCT_RATIO = 0.1
# A request whose tail repeats one cycle at least this many times over, across at least this
# share of its generated tokens, is looping: a 150-200 token cycle keeps the distinct 4-gram
# ratio near 0.3, above the ratio's bound, while n-gram drafting accepts it whole.
LOOP_MIN_REPEATS = 3
LOOP_MIN_SHARE = 0.25


def decode_rate(predicted_n: int, predicted_ms: float) -> float | None:
    """Decode tok/s of one request, the project's one definition: the tokens generated after
    the first over the server's generation time, (predicted_n - 1) / predicted_ms.

    The server's clock for ``predicted_ms`` starts when the first token is sampled (that token
    came out of the prompt's own batch, timed in ``prompt_ms``), so the time holds predicted_n - 1
    decode steps: one step per token, as llama-bench's tg times n decode calls for n tokens.
    None where nothing was timed: fewer than two tokens, or no generation time.
    """
    if predicted_n < 2 or predicted_ms <= 0:
        return None
    return (predicted_n - 1) / (predicted_ms / 1000.0)


# Two computations of one decode rate differ by less; the two conventions by 1 / predicted_n.
CONVENTION_NOISE = 1e-12


def in_decode_convention(claimed: float | None, predicted_n: int, predicted_ms: float) -> bool:
    """Whether a claimed decode tok/s is ``decode_rate`` of its timings (float noise of another
    computation of the same rate is the same convention); results written before the
    convention carry the first-token-included rate."""
    derived = decode_rate(predicted_n, predicted_ms)
    if claimed is None or derived is None:
        return claimed == derived
    return math.isclose(claimed, derived, rel_tol=CONVENTION_NOISE)


def first_token_included_rate(predicted_n: int, predicted_ms: float) -> float | None:
    """The runner's decode tok/s before ``decode_rate``: predicted_n / predicted_ms, the first
    token counted over a time that does not hold it. Only to read results written with it."""
    if predicted_ms <= 0:
        return None
    return predicted_n / (predicted_ms / 1000.0)


def acceptance_and_tau(records: Sequence[Mapping[str, Any]]) -> tuple[float | None, float | None]:
    """Pooled acceptance rate and tau (1 + accepted drafts per verify step) of some requests."""
    draft = sum(r["draft_n"] for r in records)
    accepted = sum(r["draft_n_accepted"] for r in records)
    steps = sum(r["verify_steps"] for r in records)
    # /metrics counts accepted drafts per position; engines without it give the total only.
    metric_accepted = sum(
        sum(r["accepted_per_position"]) if r["accepted_per_position"] else r["draft_n_accepted"]
        for r in records
    )
    return (
        accepted / draft if draft else None,
        1.0 + metric_accepted / steps if steps else None,
    )


def is_looping(record: Mapping[str, Any]) -> bool:
    """Whether one request's output ends in a loop (from its repeat_period and repeated tail)."""
    period = record.get("repeat_period") or 0
    tail = record.get("repeated_tail_tokens") or 0
    generated = record.get("predicted_n") or tail
    return period > 0 and tail >= LOOP_MIN_REPEATS * period and tail >= LOOP_MIN_SHARE * generated


def is_degenerate(records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether measured output degenerated: a request stopped early or looped, or the median
    distinct 4-gram ratio collapsed. Records without the repeating-tail fields (older files)
    are judged by the other two tests."""
    ratios = [record["distinct_4gram_ratio"] for record in records]
    return (
        any(record["stopped_early"] for record in records)
        or any(is_looping(record) for record in records)
        or (bool(ratios) and statistics.median(ratios) < DEGENERATE_DISTINCT_RATIO)
    )


def pooled_figures(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The part of a section's summary that its measured request records alone decide."""
    steps = sum(r["verify_steps"] for r in records)
    acceptance_rate, tau = acceptance_and_tau(records)
    return {
        "decode_tokens_per_second": _sample(records, "decode_tokens_per_second"),
        "end_to_end_tokens_per_second": _sample(records, "end_to_end_tokens_per_second"),
        "ttft_ms": summarize([r["ttft_ms"] for r in records if r["ttft_ms"] is not None]),
        "acceptance_rate": acceptance_rate,
        # tau counts the target's own token: 1 + accepted drafts per verify step.
        "tau": tau,
        "draft_tokens": sum(r["draft_n"] for r in records),
        "draft_accepted": sum(r["draft_n_accepted"] for r in records),
        "verify_steps": steps,
        "acceptance_by_position": acceptance_by_position(records, steps),
        "degenerate": is_degenerate(records),
    }


def _sample(records: Sequence[Mapping[str, Any]], name: str) -> dict[str, float | int | None]:
    """The statistics of a rate over the records that have one (a zero rate is none)."""
    return summarize([r[name] for r in records if r[name]])


def acceptance_by_position(records: Sequence[Mapping[str, Any]], steps: int) -> list[float] | None:
    """The share of the ``steps`` verify steps in which draft position i was accepted, summed
    over the records' per-position counts; None without a verify step."""
    if not steps:
        return None
    positions = max((len(r["accepted_per_position"]) for r in records), default=0)
    counts = [0] * positions
    for record in records:
        for index, count in enumerate(record["accepted_per_position"]):
            counts[index] += count
    return [count / steps for count in counts]
