"""What a section measured beside its requests (``runner.results.requests``): each point of the
protocol, and the summary pooled over its requests (the measured config's with what pairing it
with its baseline found, ``ResultSummary``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from runner.config import MAX_GPUS, MAX_N_MAX
from runner.fidelity import FidelityGrade
from runner.protocols import MAX_CONCURRENCY
from runner.results.fields import (
    Amount,
    ByteCount,
    FiniteFloat,
    Share,
    ShortText,
    TokenCount,
    TokenTotal,
    _numbered_in_order,
    _Strict,
)
from runner.results.figures import (
    GpuFigures,
    Latency,
    QualityDifference,
    QualityFigures,
    Roofline,
    Statistics,
)


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
    # The output-length protocol (runner.protocols.output_length): the tokens the point's measured requests
    # generated, and on the measured config's points the speedup's 95% interval (delta method).
    generated_tokens: Statistics | None = None
    speedup_ci95_low: Amount | None = None
    speedup_ci95_high: Amount | None = None
    # The point's latency percentiles and goodput; absent in results recorded before.
    latency: Latency | None = None


# Relative slack between the GPUs' energies and the section's: the same joules summed two ways.
GPU_ENERGY_TOLERANCE = 1e-6


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
        if self.gpus is not None:
            _numbered_in_order(self.gpus)
            self._gpu_peaks_problem(self.gpus)
            self._gpu_energies_problem(self.gpus)
        return self

    def _gpu_peaks_problem(self, gpus: list[GpuFigures]) -> None:
        """The total's peak is one moment's sum: at least any GPU's peak, at most all of them."""
        peaks = [gpu.peak_memory_bytes for gpu in gpus]
        total = self.peak_memory_bytes
        if total is None or self.memory_kind != "gpu" or None in peaks:
            return
        known = [peak or 0 for peak in peaks]
        if not max(known) <= total <= sum(known):
            raise ValueError(
                f"peak_memory_bytes {total} does not lie between the largest GPU's peak "
                f"{max(known)} and the GPUs' peaks together {sum(known)}"
            )

    def _gpu_energies_problem(self, gpus: list[GpuFigures]) -> None:
        """The GPUs' energies add up to the section's, each GPU's or none."""
        energies = [gpu.energy_joules for gpu in gpus if gpu.energy_joules is not None]
        if not energies:
            return
        if len(energies) < len(gpus) or self.energy_joules is None:
            raise ValueError(
                "gpus: an energy per GPU needs every GPU's and the section's energy_joules"
            )
        together = sum(energies)
        slack = GPU_ENERGY_TOLERANCE * max(abs(self.energy_joules), 1.0)
        if abs(together - self.energy_joules) > slack:
            raise ValueError(
                f"gpus: the GPUs' energies add up to {together:.6g} J, but energy_joules "
                f"is {self.energy_joules:.6g} J"
            )


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
