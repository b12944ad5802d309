"""The runner's result as pydantic models: the one description of a benchmark result.

``BenchmarkResult`` is what ``run_benchmark`` returns and ``python -m runner run --out`` writes;
the service reads worker results, result files and uploads through ``load_result``. The models
are strict: unknown fields are refused, numbers are finite, counts non-negative and bounded,
strings bounded and free of NUL characters, and what can be derived is checked against its
evidence (a config's key, whether it is synthetic, which config the baseline must be, every
request's rates, clocks and counts against each other, every section's records against its
config, the engine and the protocol's plan, and every section's summary, points and speedups
against its own measured requests, by ``runner.evidence``). A result written before the decode
convention loads with its decode figures derived again under it (``load_result``).

The shape is RESULT_SCHEMA_VERSION 1, the plain JSON data results were before these models:
``model_dump(mode="json")`` gives the same keys, nesting and field order. Fields added over time
are optional with None defaults, so an older file still validates (dumped as null, or left out
with ``exclude_unset=True``). The baseline section has no pairing fields (speedup, lossless, ...)
and no run-wide provenance (engine, system, times): the result's are subclasses of a section's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from runner.config import MAX_CONCURRENCY, MAX_GPUS, MAX_N_MAX, BenchmarkConfig
from runner.errors import ResultError
from runner.evidence import (
    evidence_problem,
    in_current_convention,
    request_problem,
    written_before_the_convention,
)
from runner.fidelity import MAX_DIVERGENCES, NEAR_TIE, Divergence, DivergenceKind, FidelityGrade
from runner.protocols import stored_canonical

RESULT_SCHEMA_VERSION = 1

MAX_TOKENS = 10**9  # one request's tokens
MAX_TOTAL_TOKENS = 10**12  # a whole run's tokens
MAX_BYTES = 2**53
MAX_FIGURE = 1e15
MAX_REQUESTS = 100_000
MAX_POINTS = 64
MAX_LOG_CHARS = 65_536
# One streamed request's content chunks, and a section's latency samples (every chunk gap).
MAX_TOKENS_STREAMED = 1_000_000
MAX_LATENCY_SAMPLES = MAX_REQUESTS * MAX_TOKENS_STREAMED
SHOWN_ERRORS = 3
STATISTIC_FIGURES = ("mean", "median", "stdev", "min", "max", "ci95_low", "ci95_high")


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain a NUL character")
    return value


def _aware_timestamp(value: str) -> str:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("must be an ISO 8601 date and time") from None
    if moment.tzinfo is None:
        raise ValueError("must carry its time zone")
    return value


ShortText = Annotated[str, StringConstraints(max_length=256), AfterValidator(_no_nul)]
Text = Annotated[str, StringConstraints(max_length=4096), AfterValidator(_no_nul)]
LongText = Annotated[str, StringConstraints(max_length=MAX_LOG_CHARS), AfterValidator(_no_nul)]
Timestamp = Annotated[str, StringConstraints(max_length=64), AfterValidator(_aware_timestamp)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
ConfigKey = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")]

FiniteFloat = Annotated[float, Field(allow_inf_nan=False, ge=-MAX_FIGURE, le=MAX_FIGURE)]
# Seconds, milliseconds, tokens per second, tau, speedup: finite and never negative.
Amount = Annotated[float, Field(allow_inf_nan=False, ge=0, le=MAX_FIGURE)]
Share = Annotated[float, Field(allow_inf_nan=False, ge=0, le=1)]
TokenCount = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
TokenTotal = Annotated[int, Field(ge=0, le=MAX_TOTAL_TOKENS)]
ByteCount = Annotated[int, Field(ge=0, le=MAX_BYTES)]
# Sizes read from a model's metadata: layers, widths, vocabulary, context.
Count = Annotated[int, Field(ge=0, le=MAX_TOKENS)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


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
    def _consistent(self) -> Statistics:
        figures = [getattr(self, name) for name in STATISTIC_FIGURES]
        if self.n == 0 and any(figure is not None for figure in figures):
            raise ValueError("statistics of no values must all be null")
        spread = ("stdev", "ci95_low", "ci95_high")
        needed = [
            getattr(self, name)
            for name in STATISTIC_FIGURES
            if self.n > 1 or (self.n == 1 and name not in spread)
        ]
        if any(figure is None for figure in needed):
            raise ValueError(f"statistics of {self.n} values need every figure")
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


class QualityScore(_Strict):
    """One quality-protocol request scored (``runner.quality.score``): its task, the expected
    answer (computed by the project), the output text, the answer extracted from it and whether
    it is correct. ``runner.evidence`` regenerates the task and scores the text again."""

    task_id: ShortText
    kind: ShortText
    expected: ShortText
    output_text: Text
    extracted: ShortText
    correct: bool


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


class RequestRecord(_Strict):
    """One measured request, as ``runner.engines.measure.build_record`` defines its figures."""

    phase: Literal["warmup", "measure"]
    point: Annotated[int, Field(ge=0, lt=MAX_POINTS)]
    input_tokens: TokenCount | None
    output_tokens_requested: TokenCount
    prompt_n: TokenCount
    prompt_ms: Amount
    predicted_n: TokenCount
    predicted_ms: Amount
    decode_tokens_per_second: Amount | None
    server_predicted_per_second: Amount | None
    end_to_end_tokens_per_second: Amount | None
    ttft_ms: Amount | None
    ttft_source: Literal["client stream", "server prompt time", "in process"] | None = None
    wall_ms: Amount
    draft_n: TokenCount
    draft_n_accepted: TokenCount
    verify_steps: TokenCount
    tau: Amount | None
    accepted_per_position: Annotated[list[TokenCount], Field(max_length=MAX_N_MAX)]
    output_sha256: Sha256
    distinct_4gram_ratio: Share
    stopped_early: bool
    index: Annotated[int, Field(ge=0, lt=MAX_REQUESTS)]
    first_divergence: TokenCount | None
    # Prompt hash and repeating tail (runner.engines.measure); divergence class (runner.fidelity).
    prompt_sha256: Sha256 | None = None
    repeat_period: TokenCount | None = None
    repeated_tail_tokens: TokenCount | None = None
    divergence: DivergenceKind | None = None
    divergence_margin: Amount | None = None
    # Every divergence, judged (runner.fidelity.judge_divergences); absent in older files, whose
    # grade judged the first one only. The first entry is first_divergence, divergence, margin.
    divergences: Annotated[list[Divergence], Field(max_length=MAX_DIVERGENCES)] | None = None
    # NVML's energy counter across the request (runner.energy); None off CUDA or without NVML.
    energy_joules: Amount | None = None
    # The concurrency protocol's wave (round) and requests in flight in it; the categories
    # protocol's prompt category (runner.protocols, docs/PROTOCOLS.md).
    round: Annotated[int, Field(ge=0, lt=MAX_REQUESTS)] | None = None
    concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)] | None = None
    category: ShortText | None = None
    # A streamed request: when each content chunk arrived, in ms after it was sent (the first is
    # its ttft_ms); null for a whole response. Its time per output token (runner.stats).
    chunk_arrival_ms: Annotated[list[Amount], Field(max_length=MAX_TOKENS_STREAMED)] | None = None
    tpot_ms: Amount | None = None
    # The quality protocol's score of the request's output (runner.quality); null elsewhere.
    quality: QualityScore | None = None

    @model_validator(mode="after")
    def _accepted_were_drafted(self) -> RequestRecord:
        if self.draft_n_accepted > self.draft_n:
            raise ValueError(
                f"draft_n_accepted {self.draft_n_accepted} is above draft_n {self.draft_n}"
            )
        return self

    @model_validator(mode="after")
    def _figures_agree_with_its_own_counts(self) -> RequestRecord:
        # Decode and end-to-end rates from its timings, its clocks, tau and the per-position
        # counts from its counts (runner.evidence.request_problem).
        if problem := request_problem(self.model_dump()):
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _divergences_follow_the_first(self) -> RequestRecord:
        if self.divergences is None:
            return self
        first = self.divergences[0] if self.divergences else None
        claimed = (self.first_divergence, self.divergence, self.divergence_margin)
        if claimed != ((first.position, first.kind, first.margin) if first else (None,) * 3):
            raise ValueError(
                "divergences do not start with first_divergence, divergence and divergence_margin"
            )
        positions = [found.position for found in self.divergences]
        if positions != sorted(set(positions)):
            raise ValueError("divergences are not in increasing positions")
        # The judging goes on only after a near tie (runner.fidelity.judge_divergences).
        if any(found.kind != NEAR_TIE for found in self.divergences[:-1]):
            raise ValueError("a divergence after a mismatch or an unclassified one was judged")
        return self


class Point(_Strict):
    """One context depth of a protocol (the quick protocol has one, with no input length), one
    concurrency level, or one prompt category."""

    input_tokens: TokenCount | None
    output_tokens: TokenCount
    decode_tokens_per_second: Statistics
    acceptance_rate: Annotated[
        Share | None,
        Field(
            description="Draft tokens accepted over drafted, pooled over the point's measured "
            "requests (at a concurrency level: over its waves, every level its own figure)."
        ),
    ]
    tau: Annotated[
        Amount | None,
        Field(
            description="1 + accepted drafts per verify step, pooled over the point's measured "
            "requests. At a concurrency level above 1 a request's verify steps are its share of "
            "its wave's (its own tau is null), but the level's tau is exact: acceptance under "
            "load."
        ),
    ]
    # Per depth and category: mean decode over the baseline's; per concurrency level: mean
    # aggregate tok/s over the baseline's.
    speedup: Amount | None
    # The concurrency protocol: requests in flight, and per round all generated tokens over the
    # round's wall time (n = rounds); time to first token of the level's requests.
    concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)] | None = None
    aggregate_tokens_per_second: Statistics | None = None
    ttft_ms: Statistics | None = None
    # The categories protocol: the prompt category.
    category: ShortText | None = None
    # The output-length protocol (runner.output_length): the tokens the point's measured requests
    # generated, and on the measured config's points the speedup's 95% interval (delta method).
    generated_tokens: Statistics | None = None
    speedup_ci95_low: Amount | None = None
    speedup_ci95_high: Amount | None = None
    # The point's latency percentiles and goodput; absent in results recorded before.
    latency: Latency | None = None


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


GpuIndex = Annotated[int, Field(ge=0, lt=MAX_GPUS)]
# Relative slack between the GPUs' energies and the section's: the same joules summed two ways.
GPU_ENERGY_TOLERANCE = 1e-6


def _numbered_in_order(gpus: list[Any] | None) -> None:
    if gpus is not None and [gpu.index for gpu in gpus] != list(range(len(gpus))):
        raise ValueError("gpus must be numbered 0, 1, ... in order, each once")


class GpuFigures(_Strict):
    """One GPU's share of a section (``runner.provenance.MemorySampler``, ``runner.energy``):
    its own peak memory, and its energy over the measured requests where NVML counts it."""

    index: GpuIndex
    peak_memory_bytes: ByteCount | None = None
    energy_joules: Amount | None = None


# Summary fields only results written before carry: still loaded (and checked as they were
# defined), never set by the runner, so they dump as null and ``exclude_unset`` leaves them out.
LEGACY_SUMMARY_FIELDS: tuple[str, ...] = ("joules_per_accepted_token",)


class Summary(_Strict):
    """A section's pooled figures: speed, acceptance, memory and where the time went."""

    decode_tokens_per_second: Statistics
    end_to_end_tokens_per_second: Statistics
    ttft_ms: Statistics
    acceptance_rate: Share | None
    tau: Amount | None
    draft_tokens: TokenTotal
    draft_accepted: TokenTotal
    verify_steps: TokenTotal
    acceptance_by_position: Annotated[list[Share], Field(max_length=MAX_N_MAX)] | None
    peak_memory_bytes: ByteCount | None
    memory_kind: Literal["gpu", "process"] | None
    degenerate: bool
    gpu_seconds: Amount
    engine_seconds: Amount
    load_seconds: Amount | None
    # What the runner adds beyond load and generation; a difference of clocks, so not bounded at 0.
    harness_overhead_seconds: FiniteFloat | None = None
    # runner.energy's figures from the requests' energy_joules; runner.roofline's ceiling.
    energy_joules: Amount | None = None
    joules_per_token: Amount | None = None
    # Total energy over accepted draft tokens, in results written before it was dropped (there
    # is no separate energy of an accepted draft token); still loaded, never shown or written.
    joules_per_accepted_token: Amount | None = None
    roofline: Roofline | None = None
    # Each GPU the engine used, in its order (absent in results recorded before): its own peak
    # memory (peak_memory_bytes is the peak of their total at one moment) and its energy
    # (energy_joules is their sum).
    gpus: Annotated[list[GpuFigures], Field(min_length=1, max_length=MAX_GPUS)] | None = None
    # The quality protocol: the section's accuracy from its records' scores; null elsewhere.
    quality: QualityFigures | None = None
    # The section's latency percentiles and goodput; absent in results recorded before.
    latency: Latency | None = None

    @model_validator(mode="after")
    def _accepted_were_drafted(self) -> Summary:
        if self.draft_accepted > self.draft_tokens:
            raise ValueError(
                f"draft_accepted {self.draft_accepted} is above draft_tokens {self.draft_tokens}"
            )
        return self

    @model_validator(mode="after")
    def _gpus_add_up(self) -> Summary:
        if self.gpus is None:
            return self
        _numbered_in_order(self.gpus)
        peaks = [gpu.peak_memory_bytes for gpu in self.gpus]
        total = self.peak_memory_bytes
        if total is not None and self.memory_kind == "gpu" and None not in peaks:
            known = [peak or 0 for peak in peaks]
            # The total's peak is one moment's sum: at least any GPU's peak, at most all of them.
            if not max(known) <= total <= sum(known):
                raise ValueError(
                    f"peak_memory_bytes {total} does not lie between the largest GPU's peak "
                    f"{max(known)} and the GPUs' peaks together {sum(known)}"
                )
        energies = [gpu.energy_joules for gpu in self.gpus]
        if any(joules is not None for joules in energies):
            if None in energies or self.energy_joules is None:
                raise ValueError(
                    "gpus: an energy per GPU needs every GPU's and the section's energy_joules"
                )
            together = sum(joules or 0.0 for joules in energies)
            slack = GPU_ENERGY_TOLERANCE * max(abs(self.energy_joules), 1.0)
            if abs(together - self.energy_joules) > slack:
                raise ValueError(
                    f"gpus: the GPUs' energies add up to {together:.6g} J, but energy_joules "
                    f"is {self.energy_joules:.6g} J"
                )
        return self


class ResultSummary(Summary):
    """The measured config's summary, with what pairing it with its baseline found."""

    speedup: Amount | None
    lossless: bool | None
    baseline_decode_tokens_per_second: Amount | None
    lossless_note: ShortText | None
    # runner.fidelity's grade; runner.protocols.repeated_prompt (n-gram configs only).
    fidelity: FidelityGrade | None = None
    repeated_prompt: bool | None = None
    # The concurrency protocol with a baseline: the lowest level whose speedup is below 1.
    crossover_concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)] | None = None
    # The quality protocol with a baseline: accuracy minus the baseline's, paired by task.
    quality_difference: QualityDifference | None = None


class ModelFileInfo(_Strict):
    """One GGUF file as ``runner.gguf.inspect.ModelInfo.as_dict()`` describes it."""

    path: Text
    sha256: Sha256
    size_bytes: ByteCount
    architecture: ShortText
    file_type: ShortText | Annotated[int, Field(ge=0, le=2**32)] | None = None
    n_embd: Count | None = None
    block_count: Count | None = None
    vocab_size: Count | None = None
    context_length: Count | None = None
    name: Text | None = None
    dflash_target_layers: Annotated[list[Count], Field(max_length=1024)] | None = None
    dflash_block_size: Count | None = None
    nextn_predict_layers: Count | None = None
    # runner.roofline: bytes of weights one generated token reads.
    weight_bytes_per_token: ByteCount | None = None
    # Whether the header marks the file as test weights; absent in results recorded before.
    test_weights: bool | None = None
    # K and V cache elements per token of context (runner.compatibility's memory estimate).
    kv_elements_per_token: Annotated[int, Field(ge=0, le=2**40)] | None = None


class ModelPair(_Strict):
    """The target and, where the config has one, the draft model."""

    target: ModelFileInfo
    draft: ModelFileInfo | None


class EngineInfo(_Strict):
    """The engine that measured: ``runner.engines.build.Engine.as_dict()``."""

    server_path: Text
    release: ShortText
    backend: ShortText
    build_flags: Annotated[list[Text], Field(max_length=256)]
    bench_path: Text | None = None
    source: ShortText | None = None


class GpuDevice(_Strict):
    """One GPU the engine could use, as ``runner.provenance.visible_gpus`` reads it from NVML."""

    index: GpuIndex
    name: ShortText
    raw_name: ShortText | None = None
    memory_bytes: ByteCount | None = None


class SystemInfo(_Strict):
    """The host, as ``runner.provenance.system_info`` reads it; every field may be unknown."""

    hostname: ShortText | None = None
    platform: ShortText | None = None
    cpu: ShortText | None = None
    cpu_count: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    memory_bytes: ByteCount | None = None
    python: ShortText | None = None
    packages: Annotated[dict[ShortText, ShortText], Field(max_length=64)] | None = None
    gpu: ShortText | None = None
    gpu_memory_bytes: ByteCount | None = None
    driver: ShortText | None = None
    cuda: ShortText | None = None
    gpu_raw_name: ShortText | None = None
    gpu_count: Annotated[int, Field(ge=0, le=1024)] | None = None
    # runner.roofline.peak_bandwidth of the GPUs the engine uses (NVML); None without NVML.
    gpu_peak_bandwidth_bytes_per_second: ByteCount | None = None
    # Every GPU visible to the engine, in its order; absent in results recorded before.
    gpus: Annotated[list[GpuDevice], Field(max_length=MAX_GPUS)] | None = None

    @field_validator("gpus")
    @classmethod
    def _gpus_in_order(cls, gpus: list[GpuDevice] | None) -> list[GpuDevice] | None:
        _numbered_in_order(gpus)
        return gpus


class TokenBudget(_Strict):
    """``runner.protocols.token_budget``: what the protocol cost, warm-ups included."""

    requests: TokenTotal
    prompt_tokens: TokenTotal
    generated_tokens: TokenTotal
    total_tokens: TokenTotal


class Provenance(_Strict):
    """How a section was measured: the exact command, the models and the engine's log tail."""

    argv: Annotated[list[Text], Field(max_length=500)]
    command: LongText
    models: ModelPair
    engine_log_tail: LongText


class PairedRound(_Strict):
    """One round of a paired run (``runner.benchmark._schedule``): which side ran first, and the
    measured requests (``requests[].index``, the same in both sections) it measured on both."""

    round: Annotated[int, Field(ge=0, lt=MAX_REQUESTS)]
    # The concurrency protocol's level, whose own sessions the round ran in; None otherwise.
    concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)] | None = None
    order: Annotated[list[Literal["speculative", "baseline"]], Field(min_length=2, max_length=2)]
    request_indices: Annotated[
        list[Annotated[int, Field(ge=0, lt=MAX_REQUESTS)]],
        Field(min_length=1, max_length=MAX_REQUESTS),
    ]

    @field_validator("order")
    @classmethod
    def _both_sides(cls, order: list[str]) -> list[str]:
        if sorted(order) != ["baseline", "speculative"]:
            raise ValueError("must name each side once: speculative and baseline")
        return order


class ResultProvenance(Provenance):
    """The measured config's provenance, with the run's engine, host, times and token budget."""

    engine: EngineInfo
    system: SystemInfo
    started_at: Timestamp
    finished_at: Timestamp
    token_budget: TokenBudget
    # A paired run's rounds in the order they ran; None unpaired, or recorded before rounds.
    paired_rounds: Annotated[list[PairedRound], Field(max_length=MAX_REQUESTS)] | None = None


class Section(_Strict):
    """One measured config: the config, its summary, per-depth points and per-request records.

    ``config`` is the runner's own ``BenchmarkConfig``, dumped as its canonical dict;
    ``config_key`` and ``synthetic`` must be what that config says they are.
    """

    config: BenchmarkConfig
    config_key: ConfigKey
    synthetic: bool
    summary: Summary
    points: Annotated[list[Point], Field(max_length=MAX_POINTS)]
    requests: Annotated[list[RequestRecord], Field(max_length=MAX_REQUESTS)]
    provenance: Provenance

    @field_validator("config", mode="before")
    @classmethod
    def _config_from_canonical(cls, value: Any) -> Any:
        if isinstance(value, dict):
            try:
                return BenchmarkConfig.from_canonical(stored_canonical(value))
            except ValidationError:
                pass  # The field's own validation names every error, with its path.
        return value

    @field_serializer("config")
    def _canonical_config(self, config: BenchmarkConfig) -> dict[str, Any]:
        return config.canonical()

    @field_validator("config_key")
    @classmethod
    def _key_of_the_config(cls, key: str, info: ValidationInfo) -> str:
        config = info.data.get("config")
        if isinstance(config, BenchmarkConfig) and config.key != key:
            raise ValueError(f"does not match the config, whose key is {config.key}")
        return key

    @field_validator("synthetic")
    @classmethod
    def _synthetic_as_the_config_says(cls, synthetic: bool, info: ValidationInfo) -> bool:
        config = info.data.get("config")
        if isinstance(config, BenchmarkConfig) and config.is_synthetic != synthetic:
            raise ValueError(f"is {synthetic}, but the config says {config.is_synthetic}")
        return synthetic


class BenchmarkResult(Section):
    """A whole result: the measured config's section, the engine, and its paired baseline.

    ``model_dump(mode="json")`` is the plain dict results always were; fields an older file
    lacked dump as null, and ``exclude_unset=True`` leaves them out (see the module docstring).
    """

    summary: ResultSummary
    provenance: ResultProvenance
    schema_version: Literal[1]
    engine: EngineInfo
    baseline: Section | None = None

    @field_validator("baseline")
    @classmethod
    def _the_paired_baseline(cls, baseline: Section | None, info: ValidationInfo) -> Section | None:
        config = info.data.get("config")
        if baseline is None or not isinstance(config, BenchmarkConfig):
            return baseline
        if baseline.config.is_speculative:
            raise ValueError("the baseline config is speculative")
        expected = config.baseline().key
        if baseline.config_key != expected:
            raise ValueError(
                f"its config (key {baseline.config_key}) is not the config's paired baseline "
                f"(key {expected})"
            )
        return baseline

    @model_validator(mode="after")
    def _rounds_cover_the_requests(self) -> BenchmarkResult:
        rounds = self.provenance.paired_rounds
        if rounds is None:
            return self
        if self.baseline is None:
            raise ValueError("provenance.paired_rounds: rounds are recorded without a baseline")
        indices = sorted(index for paired in rounds for index in paired.request_indices)
        if indices != list(range(len(self.requests))):
            raise ValueError(
                "provenance.paired_rounds: the rounds' request indices must name every measured "
                f"request once (0 to {len(self.requests) - 1})"
            )
        for paired in rounds:
            levels = {self.requests[index].concurrency for index in paired.request_indices}
            if levels != {paired.concurrency}:
                raise ValueError(
                    f"provenance.paired_rounds: round {paired.round} says concurrency "
                    f"{paired.concurrency}, but its requests ran at {sorted(levels, key=str)}"
                )
        return self

    @model_validator(mode="after")
    def _figures_from_the_requests(self) -> BenchmarkResult:
        # The config, engine and provenance too: the roofline is derived from them.
        sections = {"config", "summary", "points", "requests", "baseline", "engine", "provenance"}
        if problem := evidence_problem(self.model_dump(include=sections)):
            raise ValueError(problem)
        return self


def result_error_message(error: ValidationError) -> str:
    """A result's validation errors as one line: the first few, each with its field path."""
    items = error.errors(include_url=False)
    parts = []
    for item in items[:SHOWN_ERRORS]:
        location = ".".join(str(part) for part in item["loc"])
        message = " ".join(item["msg"].removeprefix("Value error, ").split())
        parts.append(f"{location}: {message}" if location else message)
    more = f" (and {len(items) - SHOWN_ERRORS} more)" if len(items) > SHOWN_ERRORS else ""
    return "invalid result: " + " | ".join(parts) + more


def result_field_errors(error: ValidationError) -> dict[str, list[str]]:
    """Every validation error, grouped by the top-level field it is in, with its whole path."""
    errors: dict[str, list[str]] = {}
    for item in error.errors(include_url=False):
        location = [str(part) for part in item["loc"]]
        message = " ".join(item["msg"].removeprefix("Value error, ").split())
        # A whole-result check names its own fields in its message.
        shown = f"{'.'.join(location)}: {message}" if location else message
        errors.setdefault(location[0] if location else "non_field_errors", []).append(shown)
    return errors


def load_result(data: bytes | str | dict[str, Any]) -> BenchmarkResult:
    """Validate a result from JSON text or parsed JSON data; raise ResultError in one line.

    A result written before the decode convention (``runner.stats.decode_rate``) is checked as
    it was written, then returned with its decode figures derived again under the convention
    (``runner.evidence.in_current_convention``), so that whatever is stored or shown from it
    counts decode tok/s one way."""
    try:
        if isinstance(data, bytes | str):
            result = BenchmarkResult.model_validate_json(data)
        else:
            result = BenchmarkResult.model_validate(data)
        written = result.model_dump(mode="json", exclude_unset=True)
        if written_before_the_convention(written):
            result = BenchmarkResult.model_validate(in_current_convention(written))
        return result
    except ValidationError as error:
        raise ResultError(result_error_message(error), result_field_errors(error)) from None
