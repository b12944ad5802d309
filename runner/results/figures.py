"""The figures a result reports, as the runner derives them from its measured requests: a
sample's statistics (``runner.stats.summarize``), latency percentiles and goodput
(``runner.stats.latency_figures``), the quality protocol's accuracy and its paired difference,
the roofline (``runner.roofline``) and each GPU's share of a section."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from runner.protocols import MAX_CONCURRENCY
from runner.results.fields import (
    MAX_BYTES,
    MAX_FIGURE,
    MAX_LATENCY_SAMPLES,
    MAX_POINTS,
    MAX_REQUESTS,
    Amount,
    ByteCount,
    FiniteFloat,
    GpuIndex,
    Share,
    _Strict,
)

STATISTIC_FIGURES = ("mean", "median", "stdev", "min", "max", "ci95_low", "ci95_high")
SPREAD_FIGURES = ("stdev", "ci95_low", "ci95_high")


class Statistics(_Strict):
    """n, mean, median, stdev, min, max and the Student-t 95% interval of the mean, as
    ``runner.stats.summarize`` computes them: every figure is null when n is 0, and one value
    has no spread (stdev and interval null; older files' 0.0 and [mean, mean] are accepted too,
    ``runner.evidence`` says which form)."""

    n: Annotated[int, Field(ge=0, le=MAX_REQUESTS)]
    mean: Amount | None
    median: Amount | None
    stdev: Amount | None
    min: Amount | None
    max: Amount | None
    ci95_low: FiniteFloat | None
    ci95_high: FiniteFloat | None

    @model_validator(mode="after")
    def _every_figure_of_its_n(self) -> Statistics:
        figures = {name: getattr(self, name) for name in STATISTIC_FIGURES}
        if self.n == 0 and any(figure is not None for figure in figures.values()):
            raise ValueError("statistics of no values must all be null")
        # One value has no spread: its stdev and interval may be null.
        spread = SPREAD_FIGURES if self.n == 1 else ()
        if self.n and any(v is None for name, v in figures.items() if name not in spread):
            raise ValueError(f"statistics of {self.n} values need every figure")
        return self

    @model_validator(mode="after")
    def _bounds_in_order(self) -> Statistics:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        low, high = self.ci95_low, self.ci95_high
        if low is not None and high is not None and low > high:
            raise ValueError(f"ci95_low {low} is above ci95_high {high}")
        return self


class Percentiles(_Strict):
    """n, mean, p50, p90, p99 and max of some latencies in ms, as
    ``runner.stats.latency_percentiles`` computes them (linear between the closest ranks):
    every figure null for no values, and the percentiles in order."""

    n: Annotated[int, Field(ge=0, le=MAX_LATENCY_SAMPLES)]
    mean: Amount | None
    p50: Amount | None
    p90: Amount | None
    p99: Amount | None
    max: Amount | None

    @model_validator(mode="after")
    def _consistent(self) -> Percentiles:
        figures = [self.mean, self.p50, self.p90, self.p99, self.max]
        if self.n == 0 and any(figure is not None for figure in figures):
            raise ValueError("percentiles of no values must all be null")
        if self.n > 0 and any(figure is None for figure in figures):
            raise ValueError(f"percentiles of {self.n} values need every figure")
        ordered = [self.p50, self.p90, self.p99, self.max]
        if self.n > 0 and ordered != sorted(ordered):  # type: ignore[type-var]
            raise ValueError("p50, p90, p99 and max must not decrease")
        return self


class Goodput(_Strict):
    """``runner.stats.goodput``: of the requests with a time per output token, how many met the
    stated objective (TPOT <= tpot_ms_objective), their share and its Wilson 95% interval."""

    tpot_ms_objective: Annotated[float, Field(allow_inf_nan=False, gt=0, le=MAX_FIGURE)]
    requests: Annotated[int, Field(ge=0, le=MAX_REQUESTS)]
    met: Annotated[int, Field(ge=0, le=MAX_REQUESTS)]
    share: Share | None
    ci95_low: Share | None
    ci95_high: Share | None

    @model_validator(mode="after")
    def _met_among_the_requests(self) -> Goodput:
        if self.met > self.requests:
            raise ValueError(f"met {self.met} is above requests {self.requests}")
        return self


class Latency(_Strict):
    """``runner.stats.latency_figures``: what a serving user waits, per request (time to first
    token, time per output token = (e2e - TTFT) / (output tokens - 1), end-to-end latency) and
    per streamed content chunk (inter-token latency: the gap between successive chunks, near 0
    for the tokens one speculative verify step yields together), and the goodput."""

    ttft_ms: Percentiles
    tpot_ms: Percentiles
    itl_ms: Percentiles
    e2e_ms: Percentiles
    goodput: Goodput


class QualityFigures(_Strict):
    """``runner.stats.accuracy_figures``: a section's tasks, correct answers, accuracy (their
    share) and its Wilson 95% interval, from its records' scores."""

    tasks: Annotated[int, Field(ge=1, le=MAX_REQUESTS)]
    correct: Annotated[int, Field(ge=0, le=MAX_REQUESTS)]
    accuracy: Share
    ci95_low: Share
    ci95_high: Share


class QualityDifference(_Strict):
    """``runner.stats.quality_difference``: the config's accuracy minus its paired baseline's on
    the same tasks: the pair counts, the difference, Newcombe's paired 95% interval and
    McNemar's exact p-value."""

    pairs: Annotated[int, Field(ge=1, le=MAX_REQUESTS)]
    both_correct: Annotated[int, Field(ge=0, le=MAX_REQUESTS)]
    only_speculative_correct: Annotated[int, Field(ge=0, le=MAX_REQUESTS)]
    only_baseline_correct: Annotated[int, Field(ge=0, le=MAX_REQUESTS)]
    neither_correct: Annotated[int, Field(ge=0, le=MAX_REQUESTS)]
    difference: Annotated[float, Field(allow_inf_nan=False, ge=-1, le=1)]
    ci95_low: Annotated[float, Field(allow_inf_nan=False, ge=-1, le=1)]
    ci95_high: Annotated[float, Field(allow_inf_nan=False, ge=-1, le=1)]
    mcnemar_p: Share


class Roofline(_Strict):
    """``runner.roofline``: a section's rate against the GPU's memory-bandwidth ceiling for the
    bytes one step reads (CUDA hosts only; checked against the section's own figures by
    ``runner.evidence``). Results written before the step was counted carry the first five
    fields only (the target's weights alone, ``runner.roofline.legacy_roofline``)."""

    peak_bandwidth_bytes_per_second: Annotated[int, Field(gt=0, le=MAX_BYTES)]
    bytes_per_token: Annotated[int, Field(gt=0, le=MAX_BYTES)]
    ceiling_tokens_per_second: Amount
    fraction: Amount | None
    flag: Literal["above_ceiling", "far_below"] | None
    # The step's bytes term by term (a null term is unknown and left out), the tokens per stream
    # and the streams it yields for, the mean context of its K/V read and the rate held
    # against it: per-request decode (one stream) or a concurrency level's aggregate.
    target_weight_bytes: Annotated[int, Field(gt=0, le=MAX_BYTES)] | None = None
    kv_bytes_per_step: ByteCount | None = None
    draft_bytes_per_step: ByteCount | None = None
    bytes_per_step: Annotated[int, Field(gt=0, le=MAX_BYTES)] | None = None
    tokens_per_step: Amount | None = None
    streams: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)] | None = None
    context_tokens: Amount | None = None
    rate: Literal["decode", "aggregate"] | None = None
    # A concurrency section: every level's own (the top figures are the lowest level's).
    concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)] | None = None
    levels: Annotated[list[Roofline], Field(max_length=MAX_POINTS)] | None = None


class GpuFigures(_Strict):
    """One GPU's share of a section (``runner.provenance.MemorySampler``, ``runner.energy``):
    its own peak memory, and its energy over the measured requests where NVML counts it."""

    index: GpuIndex
    peak_memory_bytes: ByteCount | None = None
    energy_joules: Amount | None = None
