"""Whether a measurement is too noisy, or too thin, to stand for what it claims, and why in words.

Three rules, each on what a batch stored:

- **Outlier**: among the repeats of one workload (the requests of one point: the quick
  protocol's runs, one depth of a sweep; not the categories protocol, whose prompts differ by
  design, nor concurrency, whose samples are rounds and whose requests share a wave), a request whose tok/s is below half or above twice the median of the
  others, with at least three requests in the point (with two, neither can be called the odd
  one). One request of three taking 44.8 s where the others took 2-3 s is one.
- **Interval reaches 0** (under the protocols that repeat one workload, `best_run.
  REPEATING_PROTOCOLS`; a sweep's interval pools depths by design): the figure's 95% interval has a lower end at or below 0 tok/s, so it
  says nothing about how fast the config is ("17.61 tok/s, interval 0.0-53.2").
- **Spread** (`best_run.is_noisy`): the batch's repeats spread by more than half their mean.

A noisy batch is flagged on the job page, the run page and its row, with a re-run suggested; the
board stores `LeaderboardEntry.noisy` from the same rules, and the best batch is chosen by them
(`noisy_batches`, read by `best_run`). Separately, **few verify steps**: a tau or acceptance
over fewer than `FEW_VERIFY_STEPS` verify steps (`verdicts.evidence`'s threshold) is a headline
resting on almost nothing, said beside it ("tau 17.0 from 2 verify steps"); it is not noise and
does not make a row noisy, but it is anecdotal (`verdicts.evidence`) and never crowned.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from leaderboard.verdicts.best_run import CONCURRENCY, REPEATING_PROTOCOLS, RunLike, is_noisy
from leaderboard.verdicts.evidence import MIN_VERIFY_STEPS
from leaderboard.verdicts.statistics import Interval, Sample, finite, t_interval

# A request below 1/OUTLIER_FACTOR or above OUTLIER_FACTOR times the median of the others.
OUTLIER_FACTOR = 2.0
# The fewest requests of one point in which one can be called the odd one.
OUTLIER_MIN_REQUESTS = 3
# Below this many verify steps a tau or an acceptance rate is an anecdote (`verdicts.evidence`).
FEW_VERIFY_STEPS = MIN_VERIFY_STEPS
# The protocols whose requests within a point repeat one workload.
REPEATING_POINT_PROTOCOLS = ("quick", "depth", "context-sweep")
RERUN_ADVICE = "One batch with an outlier or an interval reaching 0 says little about the speed."


@dataclass(frozen=True)
class Request:
    """What the rules read of one measured request."""

    index: int
    point: int | None
    tokens_per_second: float | None
    wall_s: float | None = None


@dataclass(frozen=True)
class Outlier:
    """A request far from the others of its point, and the range of those others."""

    request: Request
    others: tuple[Request, ...]

    def text(self) -> str:
        own = self.request
        speeds = [r.tokens_per_second for r in self.others if r.tokens_per_second is not None]
        walls = [r.wall_s for r in self.others if r.wall_s is not None]
        took = (
            f"took {own.wall_s:.1f} s ({own.tokens_per_second:.2f} tok/s)"
            if own.wall_s
            else (f"ran at {own.tokens_per_second:.2f} tok/s")
        )
        others = f"the other {len(self.others)} " + (
            f"took {_span(walls, ' s', 1)} ({_span(speeds, ' tok/s', 2)})"
            if len(walls) == len(self.others)
            else f"ran at {_span(speeds, ' tok/s', 2)}"
        )
        return f"request {own.index} {took}, {others}"


def _span(values: Sequence[float], unit: str, digits: int) -> str:
    low, high = min(values), max(values)
    if round(low, digits) == round(high, digits):
        return f"{low:.{digits}f}{unit}"
    return f"{low:.{digits}f}–{high:.{digits}f}{unit}"


def outliers(requests: Iterable[Request], *, protocol: str) -> list[Outlier]:
    """The requests whose tok/s lies below half or above twice the median of the other repeats
    of their point; none under a protocol whose requests differ by design."""
    if protocol not in REPEATING_POINT_PROTOCOLS:
        return []
    by_point: dict[int | None, list[Request]] = {}
    for request in requests:
        if finite(request.tokens_per_second) is not None:
            by_point.setdefault(request.point, []).append(request)
    return [
        outlier
        for group in by_point.values()
        if len(group) >= OUTLIER_MIN_REQUESTS
        for outlier in _point_outliers(group)
    ]


def _point_outliers(group: list[Request]) -> list[Outlier]:
    """The repeats of one point whose tok/s is off the median of the others by the factor."""
    found = []
    for request in group:
        others = tuple(r for r in group if r is not request)
        median = statistics.median(r.tokens_per_second or 0.0 for r in others)
        value = request.tokens_per_second or 0.0
        if median > 0 and not median / OUTLIER_FACTOR <= value <= median * OUTLIER_FACTOR:
            found.append(Outlier(request=request, others=others))
    return found


def reaches_zero(low: object) -> bool:
    """Whether an interval's lower end is at or below 0 (a stored NaN or nothing: no)."""
    value = finite(low)
    return value is not None and value <= 0


def few_steps_note(*, tau: object, verify_steps: object) -> str:
    """ "tau 17.0 from 2 verify steps" where a tau rests on fewer than `FEW_VERIFY_STEPS`
    verify steps; empty otherwise (or without a tau)."""
    value, steps = finite(tau), finite(verify_steps)
    if value is None or steps is None or steps >= FEW_VERIFY_STEPS:
        return ""
    count = int(steps)
    return f"tau {value:.1f} from {count} verify step{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class Noise:
    """A batch's noise verdict: which rules it trips, in words, and the few-steps note."""

    outliers: tuple[Outlier, ...] = ()
    interval_reaches_zero: bool = False
    spread: bool = False
    few_steps: str = ""

    @property
    def noisy(self) -> bool:
        return bool(self.outliers) or self.interval_reaches_zero or self.spread

    @property
    def reasons(self) -> list[str]:
        """Why it is noisy, one sentence fragment per finding."""
        found = [outlier.text() for outlier in self.outliers]
        if self.interval_reaches_zero:
            found.append("its 95% interval reaches 0 tok/s, so it does not bound the speed")
        if self.spread and not self.outliers:
            found.append("its requests spread by more than half their mean")
        return found

    @property
    def advice(self) -> str:
        return RERUN_ADVICE if self.noisy else ""


CLEAN = Noise()


def batch_noise(
    *,
    protocol: str,
    sample: Sample | None,
    requests: Iterable[Request] = (),
    interval_lows: Iterable[object] = (),
    tau: object = None,
    verify_steps: object = None,
) -> Noise:
    """The noise verdict of one batch: its requests' outliers, whether an interval shown for it
    reaches 0, its spread, and the few-steps note."""
    return Noise(
        outliers=tuple(outliers(requests, protocol=protocol)),
        interval_reaches_zero=protocol in REPEATING_PROTOCOLS
        and any(reaches_zero(low) for low in interval_lows),
        spread=is_noisy(sample, protocol=protocol),
        few_steps=few_steps_note(tau=tau, verify_steps=verify_steps),
    )


class BatchLike(RunLike, Protocol):
    """What the noise of a run reads besides `RunLike`: its interval in its own definition."""

    @property
    def ci95(self) -> tuple[float | None, float | None]: ...


def shown_interval(run: BatchLike, *, sample: Sample | None, protocol: str) -> Interval | None:
    """The 95% interval a batch's figure is shown with: its requests' (none below two), or under
    the concurrency protocol its lowest level's rounds'."""
    if protocol == CONCURRENCY:
        return t_interval(sample)
    low, high = run.ci95 if run.n >= 2 else (None, None)
    return (low, high) if low is not None and high is not None else None


def noisy_batches(
    runs: Iterable[BatchLike],
    *,
    protocol: str,
    samples: dict[int, Sample | None],
    requests: dict[int, list[Request]],
) -> dict[int, bool]:
    """Each batch's noisy flag by the three rules (by run id): what the best batch is chosen by
    and what its row's flag says, so the two never disagree."""
    found = {}
    for run in runs:
        assert run.pk is not None
        sample = samples.get(run.pk)
        interval = shown_interval(run, sample=sample, protocol=protocol)
        found[run.pk] = batch_noise(
            protocol=protocol,
            sample=sample,
            requests=requests.get(run.pk, ()),
            interval_lows=[interval[0] if interval else None],
        ).noisy
    return found


# The request record columns `requests_of` reads, in its order.
RECORD_FIELDS = (
    "index",
    "point",
    "decode_tokens_per_second",
    "end_to_end_tokens_per_second",
    "wall_ms",
)


def requests_of(records: Iterable[Sequence[object]], *, definition: str) -> list[Request]:
    """Stored request records (`RECORD_FIELDS` values) as the rules' requests, each at its
    batch's tok/s definition (decode, else end-to-end)."""
    found = []
    for index, point, decode, end_to_end, wall_ms in records:
        wall = finite(wall_ms)
        found.append(
            Request(
                index=int(index) if isinstance(index, int) else 0,
                point=point if isinstance(point, int) else None,
                tokens_per_second=finite(decode if definition == "decode" else end_to_end),
                wall_s=wall / 1000 if wall else None,
            )
        )
    return found
