"""What a leaderboard row says of its batches, decided in one place: `row_figures` turns what the
service read of a row (`RowEvidence`: its best batch and that batch's sample, the config's
interval, the paired baseline batch, the pooled figures, the outputs verdict, the noise flags and
the best batch's points and requests) into every figure the row shows (`RowFigures`), which
`services.board` writes as it is. `pooled` is the row's pooled view over all its batches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypedDict

from leaderboard.models import Config, Run
from leaderboard.verdicts.best_run import CONCURRENCY, lowest_level_pair, run_sample
from leaderboard.verdicts.concurrency import crossover_text, lowest_level_figures
from leaderboard.verdicts.evidence import anecdotal
from leaderboard.verdicts.fidelity import Outputs
from leaderboard.verdicts.noise import shown_interval
from leaderboard.verdicts.statistics import Sample
from leaderboard.verdicts.uncertainty import (
    NONE as NO_UNCERTAINTY,
)
from leaderboard.verdicts.uncertainty import (
    ROUNDS,
    Uncertainty,
    speedup_uncertainty,
)
from leaderboard.verdicts.workloads import (
    SEED_CSV_PROTOCOL,
    is_across_depths,
    is_across_lengths,
    learns_across_requests,
    prompts_unknown,
    ranking_key,
    ranking_label,
    repeats_a_prompt,
    workload_label,
)
from runner.stats import summarize


@dataclass(frozen=True)
class Pooled:
    """Every request of a row's batches as one sample: mean, requests and 95% interval."""

    mean: float | None
    n: int
    ci95_low: float | None
    ci95_high: float | None


def _pooled_values(
    runs: Sequence[Run], requests: Mapping[int, list[float | None]]
) -> tuple[list[float], bool]:
    """Every batch's per-request tok/s (a batch without records: its mean n times), and whether
    every request's own figure was known."""
    values: list[float] = []
    every_request_known = True
    for run in runs:
        # As the runner's own summary: requests without a figure (or of 0 tok/s) are left out.
        if known := [value for value in requests.get(run.pk, []) if value]:
            values += known
        elif run.tokens_per_second and run.n:
            values += [run.tokens_per_second] * run.n
            every_request_known = False
    return values, every_request_known


def pooled(runs: Sequence[Run], *, requests: Mapping[int, list[float | None]]) -> Pooled:
    """The pooled view over every batch of one tok/s definition, degenerate ones included (no
    batch is chosen here): Student t over per-request tok/s (`requests`: each batch's measured
    requests' figures, by run id).

    A batch with request records contributes each request's tok/s; a batch without any (a seed
    CSV row without samples) contributes its mean with weight n, and then the pool has no
    interval, since a mean repeated n times would understate the spread. Fewer than two
    requests have no interval either.
    """
    values, every_request_known = _pooled_values(runs, requests)
    summary = summarize(values)
    n = int(summary["n"] or 0)
    has_interval = every_request_known and n >= 2
    return Pooled(
        mean=summary["mean"],
        n=n,
        ci95_low=summary["ci95_low"] if has_interval else None,
        ci95_high=summary["ci95_high"] if has_interval else None,
    )


@dataclass(frozen=True)
class RowEvidence:
    """What the service read of one row (a config's batches on a hardware kind and release that
    sent one set of prompts), for `row_figures` to decide its figures from."""

    config: Config
    hardware_id: int
    gpu_name: str  # the kind's label: "2x RTX 3090 24GB" is not the one GPU's ranking
    engine_release: str
    prompt_set: str
    best: Run
    best_sample: Sample | None
    definition: str
    config_interval: Uncertainty
    pooled: Pooled
    outputs: Outputs
    noisy: bool
    # The baseline batch the speedup divides by, the speedup and whether that batch is noisy.
    baseline: Run | None
    speedup: float | None
    baseline_noisy: bool
    # The best batch's and the baseline batch's stored points (concurrency rows only), and the
    # best batch's requests where a verdict reads them (`reads_requests`).
    points: object = None
    baseline_points: object = None
    requests: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class RowFigures:
    """Every figure the verdicts give a leaderboard row, by its column."""

    tps_definition: str
    tokens_per_second: float
    n: int
    stdev: float | None
    median: float | None
    ci95_low: float | None
    ci95_high: float | None
    pooled_mean: float | None
    pooled_n: int
    pooled_ci95_low: float | None
    pooled_ci95_high: float | None
    end_to_end_tokens_per_second: float | None
    acceptance_rate: float | None
    tau: float | None
    lossless: bool | None
    fidelity: str
    synthetic: bool
    self_reported: bool
    degenerate: bool
    peak_memory_bytes: int | None
    speedup: float | None
    config_mean: float | None
    config_stdev: float | None
    config_n: int
    config_ci95_low: float | None
    config_ci95_high: float | None
    interval_basis: str
    speedup_ci95_low: float | None
    speedup_ci95_high: float | None
    speedup_basis: str
    noisy: bool
    baseline_noisy: bool
    draft_tokens: int
    verify_steps: int
    anecdotal: bool
    memorised: bool
    prompts_unknown: bool
    crossover: str
    ranking_key: str
    ranking_label: str
    workload_label: str

    def columns(self) -> dict[str, Any]:
        """The figures as the row's column values."""
        return {field.name: getattr(self, field.name) for field in fields(self)}


def reads_requests(config: Config) -> bool:
    """Whether a row's figures read its best batch's requests: a concurrency row's (its lowest
    level's drafting) and an n-gram row's (its prompts, `memorised`)."""
    return config.protocol == CONCURRENCY or (
        learns_across_requests(config.spec_label) and config.protocol != SEED_CSV_PROTOCOL
    )


def _headline(row: RowEvidence) -> dict[str, Any]:
    """The row's figure, its spread and the interval every page shows beside it: its best
    batch's, under the concurrency protocol its lowest level's rounds'."""
    best, sample = row.best, row.best_sample
    interval = shown_interval(best, sample=sample, protocol=row.config.protocol)
    low, high = interval if interval else (None, None)
    if row.config.protocol == CONCURRENCY:
        return {
            "tokens_per_second": sample.mean if sample else 0.0,
            "n": sample.n if sample else 0,
            "stdev": sample.stdev if sample else None,
            "median": None,
            "ci95_low": low,
            "ci95_high": high,
        }
    decode = best.tps_definition == Run.Definition.DECODE
    stdev, median = (
        (best.decode_stdev, best.decode_median) if decode else (best.e2e_stdev, best.e2e_median)
    )
    return {
        "tokens_per_second": best.tokens_per_second or 0.0,
        "n": best.n,
        # One request has no spread: its stdev would claim a certainty it lacks.
        "stdev": stdev if best.n >= 2 else None,
        "median": median,
        "ci95_low": low,
        "ci95_high": high,
    }


def _speedup_interval(row: RowEvidence) -> Uncertainty:
    """The interval of the speedup shown: the best batch against the baseline batch it is
    divided by (`speedup_uncertainty`)."""
    if row.baseline is None:
        return NO_UNCERTAINTY
    config = row.config
    if config.protocol == CONCURRENCY:
        pair = lowest_level_pair(row.points, row.baseline_points)
        own, reference = pair if pair else (None, None)
        return speedup_uncertainty(own=own, baseline=reference, unit=ROUNDS)
    return speedup_uncertainty(
        own=row.best_sample,
        baseline=run_sample(row.baseline, protocol=config.protocol),
        # A geometric mean over depths or over output lengths has no interval of its own.
        across_depths=is_across_depths(config) or is_across_lengths(config),
    )


def _drafting(row: RowEvidence) -> tuple[float | None, float | None]:
    """The row's acceptance and tau: its best batch's, but under the concurrency protocol those
    of its lowest level, the basis of every figure of such a row, not pooled over the levels."""
    if row.config.protocol != CONCURRENCY:
        return row.best.acceptance_rate, row.best.tau
    lowest = lowest_level_figures(row.points, row.requests or [])
    drafting = lowest.drafting if lowest else None
    return (drafting.acceptance, drafting.tau) if drafting else (None, None)


def _prompts(row: RowEvidence) -> tuple[bool, bool]:
    """Whether the row's figure was measured on a repeated prompt by drafting that learns across
    requests (n-gram state), and whether its prompts are unknown (a request without a prompt
    hash: it cannot count as measured on distinct prompts); the seed kit's CSV repeats one."""
    if not learns_across_requests(row.config.spec_label):
        return False, False
    if row.config.protocol == SEED_CSV_PROTOCOL:
        return True, False
    return repeats_a_prompt(row.requests or []), prompts_unknown(row.requests or [])


def _intervals(row: RowEvidence) -> dict[str, Any]:
    """The config's estimate that ties are decided on, and the speedup's interval."""
    config, speedup = row.config_interval, _speedup_interval(row)
    return {
        "config_mean": config.sample.mean if config.sample else None,
        "config_stdev": config.sample.stdev if config.sample else None,
        "config_n": config.n,
        "config_ci95_low": config.interval[0] if config.interval else None,
        "config_ci95_high": config.interval[1] if config.interval else None,
        "interval_basis": config.basis,
        "speedup_ci95_low": speedup.interval[0] if speedup.interval else None,
        "speedup_ci95_high": speedup.interval[1] if speedup.interval else None,
        "speedup_basis": speedup.basis,
    }


class Workload(TypedDict):
    """Which ranking a row is in, and its workload, in words (`RowFigures`' last fields)."""

    ranking_key: str
    ranking_label: str
    workload_label: str


def _workload(row: RowEvidence) -> Workload:
    """Which ranking the row is in, and its workload, in words."""
    config, prompts = row.config, row.prompt_set
    return {
        "ranking_key": ranking_key(
            config,
            definition=row.definition,
            hardware_id=row.hardware_id,
            engine_release=row.engine_release,
            prompt_set=prompts,
        ),
        "ranking_label": ranking_label(
            config,
            definition=row.definition,
            gpu_name=row.gpu_name,
            engine_release=row.engine_release,
            prompt_set=prompts,
        ),
        "workload_label": workload_label(config, prompt_set=prompts),
    }


def row_figures(row: RowEvidence) -> RowFigures:
    """Every figure of a row, decided from what the service read of it."""
    best, config = row.best, row.config
    acceptance, tau = _drafting(row)
    memorised, unknown = _prompts(row)
    crossover = ""
    if config.protocol == CONCURRENCY and row.baseline is not None:
        crossover = crossover_text(row.points, row.baseline_points)
    return RowFigures(
        tps_definition=row.definition,
        **_headline(row),
        pooled_mean=row.pooled.mean,
        pooled_n=row.pooled.n,
        pooled_ci95_low=row.pooled.ci95_low,
        pooled_ci95_high=row.pooled.ci95_high,
        end_to_end_tokens_per_second=best.e2e_mean,
        acceptance_rate=acceptance,
        tau=tau,
        # Decided together, so that the badge and the stored lossless agree.
        lossless=row.outputs.lossless,
        fidelity=row.outputs.fidelity,
        synthetic=best.synthetic,
        self_reported=best.self_reported,
        degenerate=best.degenerate,
        peak_memory_bytes=best.peak_memory_bytes,
        speedup=row.speedup,
        **_intervals(row),
        noisy=row.noisy,
        baseline_noisy=row.baseline_noisy,
        draft_tokens=best.draft_tokens,
        verify_steps=best.verify_steps,
        anecdotal=anecdotal(
            speculative=config.is_speculative,
            drafted=best.draft_tokens,
            verify_steps=best.verify_steps,
            tau=best.tau,
        ),
        memorised=memorised,
        prompts_unknown=unknown,
        crossover=crossover,
        **_workload(row),
    )
