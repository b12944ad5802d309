"""Output-length verdicts: per output length, whether a config beats its paired baseline.

A length's speedup is the ratio of the two sides' mean decode tok/s at that length, and its 95%
interval the delta method on the log of that ratio with Welch's degrees of freedom, computed by
the runner's own rule (`runner.protocols.output_length.speedup_interval`, the one the result's evidence is
checked with at the door) from the stored points' n, mean and standard deviation, so the page,
the API and the stored result say the same. The config is "faster" or "slower" at a length only
when the whole interval lies on one side of 1x; otherwise, or without an interval (fewer than
two requests on a side), the length is "not established". The x of a length is the tokens its
requests generated (their mean `generated_tokens`), which the runner forces to the length asked
(`ignore_eos`); the length asked is kept beside it.

How an output-length row ranks is `verdicts.workloads`' business (`is_across_lengths`): in its
own ranking, as a depth sweep does.
"""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.verdicts.concurrency import FASTER, NOT_ESTABLISHED, SLOWER
from leaderboard.verdicts.statistics import Interval, count, finite
from runner.protocols.output_length import speedup_interval


@dataclass(frozen=True)
class LengthVerdict:
    """One output length against the baseline's: both sides' decode means, the speedup with its
    interval and the verdict."""

    output_tokens: int
    generated_tokens: float | None
    requests: int | None
    decode: float | None
    baseline_decode: float | None
    baseline_requests: int | None
    speedup: float | None
    speedup_interval: Interval | None
    verdict: str


def _decode(point: dict) -> dict:
    """A stored point's decode statistics, read through the verdicts' one rule for numbers."""
    stats = point.get("decode_tokens_per_second")
    stats = stats if isinstance(stats, dict) else {}
    return {
        "n": count(stats.get("n")),
        "mean": finite(stats.get("mean")),
        "stdev": finite(stats.get("stdev")),
    }


def length_points(points: object) -> dict[int, dict]:
    """A result's points by output length (the first point of a length wins), read defensively:
    points that name a positive whole output length and no concurrency level or category."""
    found: dict[int, dict] = {}
    for point in points if isinstance(points, list) else []:
        if not isinstance(point, dict) or point.get("concurrency") is not None:
            continue
        length = count(point.get("output_tokens"))
        if length:
            found.setdefault(length, point)
    return found


def _verdict(interval: Interval | None) -> str:
    """Faster or slower only where the whole interval lies on one side of 1x."""
    if interval is not None and interval[0] > 1:
        return FASTER
    if interval is not None and interval[1] < 1:
        return SLOWER
    return NOT_ESTABLISHED


def _length_verdict(length: int, point: dict, reference: dict | None) -> LengthVerdict:
    own = _decode(point)
    base = _decode(reference) if reference is not None else None
    interval = None
    speedup = None
    if base:
        interval = speedup_interval(
            {"decode_tokens_per_second": own}, {"decode_tokens_per_second": base}
        )
        if own["mean"] is not None and base["mean"]:
            speedup = own["mean"] / base["mean"]
    generated = point.get("generated_tokens")
    return LengthVerdict(
        output_tokens=length,
        generated_tokens=finite(generated.get("mean")) if isinstance(generated, dict) else None,
        requests=own["n"],
        decode=own["mean"],
        baseline_decode=base["mean"] if base else None,
        baseline_requests=base["n"] if base else None,
        speedup=speedup,
        speedup_interval=interval,
        verdict=_verdict(interval),
    )


def length_verdicts(points: object, baseline_points: object) -> list[LengthVerdict]:
    """Each output length of a result against the same length of its baseline's, by length."""
    reference = length_points(baseline_points)
    return [
        _length_verdict(length, point, reference.get(length))
        for length, point in sorted(length_points(points).items())
    ]
