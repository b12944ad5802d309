"""The leaderboard rows: each (config, hardware, engine release) row is maintained from its
runs when they change, with the speedup over its paired baseline; every change raises the
board's version so cached pages are redone.

A row keeps the seed's rule (the batch with the best average) and what discloses it: how many
batches it was the best of and the pooled figures over all of them. It is lossless only if no
compared batch diverged. Its baseline must have run on the same engine backend and build flags,
and the baseline measured in the same runner invocation is preferred; otherwise the pairing is
refused and the row says why. Rows of models marked as test weights stay off the main ranking.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard import board_version
from leaderboard.models import (
    Config,
    EngineBuild,
    Hardware,
    LeaderboardEntry,
    ModelFile,
    RequestRecord,
    Run,
)
from runner.pairing import category_points, depth_points, speedup_over_depths
from runner.stats import ratio, summarize

# What decides whether a row is on the board and in the main ranking.
ROW_SET_FLAGS = ("synthetic", "self_reported", "degenerate", "retired", "test_weights")


def raise_board_version(*, row_set: bool = False) -> None:
    """Tell cached leaderboard pages that rows changed; call after the change, in its transaction.

    `row_set`: rows appeared, went or changed what keeps them off the ranking, so counts and
    filter choices change too (they are cached on this part of the counter alone).
    """
    board_version.raise_version(row_set=row_set)


def build_flags_key(flags: Sequence[str] | None) -> str:
    """A short fingerprint of an engine's build flags (their order ignored); empty if none known."""
    if not flags:
        return ""
    return hashlib.sha256(json.dumps(sorted(flags)).encode()).hexdigest()[:16]


def mark_test_weights(*, models: Iterable[ModelFile], test_weights: bool = True) -> int:
    """Mark model files as test weights (or clear the mark) and move their rows off (or back
    onto) the main ranking; returns the number of rows that moved."""
    ids = [model.pk for model in models]
    with transaction.atomic():
        ModelFile.objects.filter(pk__in=ids).update(test_weights=test_weights)
        rows = LeaderboardEntry.objects.filter(
            Q(config__target_id__in=ids) | Q(config__draft_id__in=ids)
        )
        marked = Q(config__target__test_weights=True) | Q(config__draft__test_weights=True)
        # A row stays off while either of its models is still marked.
        moved = rows.filter(marked, test_weights=False).update(test_weights=True)
        moved += rows.exclude(marked).filter(test_weights=True).update(test_weights=False)
        if moved:
            raise_board_version(row_set=True)
    return moved


def _uses_test_weights(config: Config) -> bool:
    ids = [pk for pk in (config.target_id, config.draft_id) if pk is not None]
    return ModelFile.objects.filter(pk__in=ids, test_weights=True).exists()


def _best_run(runs: list[Run]) -> Run:
    """The seed's rule: the batch with the best average; degenerate batches only if nothing else."""
    return max(_candidates(runs), key=lambda r: r.tokens_per_second or 0.0)


def _candidates(runs: list[Run]) -> list[Run]:
    """The batches the best is chosen from: those with an average that did not degenerate."""
    return [r for r in runs if not r.degenerate and r.tokens_per_second] or runs


@dataclass(frozen=True)
class Pooled:
    """Every request of a row's batches as one sample: mean, requests and 95% interval."""

    mean: float | None
    n: int
    ci95_low: float | None
    ci95_high: float | None


def pooled_figures(runs: Sequence[Run], *, definition: str) -> Pooled:
    """The pooled view over every batch of one tok/s definition, degenerate ones included (no
    batch is chosen here): Student t over per-request tok/s.

    A batch with request records contributes each request's tok/s; a batch without any (a seed
    CSV row without samples) contributes its mean with weight n, and then the pool has no
    interval, since a mean repeated n times would understate the spread. Fewer than two
    requests have no interval either.
    """
    field = (
        "decode_tokens_per_second"
        if definition == Run.Definition.DECODE
        else "end_to_end_tokens_per_second"
    )
    mine = [run for run in runs if run.tps_definition == definition]
    per_run: dict[int, list[float]] = defaultdict(list)
    records = RequestRecord.objects.filter(run__in=mine, phase="measure").order_by()
    for run_id, value in records.values_list("run_id", field):
        # As the runner's own summary: requests without a figure (or of 0 tok/s) are left out.
        if value:
            per_run[run_id].append(value)
    values: list[float] = []
    every_request_known = True
    for run in mine:
        if run.pk in per_run:
            values += per_run[run.pk]
        elif run.tokens_per_second and run.n:
            values += [run.tokens_per_second] * run.n
            every_request_known = False
    summary = summarize(values)
    n = int(summary["n"] or 0)
    has_interval = every_request_known and n >= 2
    return Pooled(
        mean=summary["mean"],
        n=n,
        ci95_low=summary["ci95_low"] if has_interval else None,
        ci95_high=summary["ci95_high"] if has_interval else None,
    )


def _lossless(runs: Sequence[Run]) -> bool | None:
    """False if any compared batch diverged; None if none was compared (synthetic ones claim
    nothing); True only when every compared batch matched its baseline."""
    compared = [run.lossless for run in runs if not run.synthetic and run.lossless is not None]
    return all(compared) if compared else None


# runner.fidelity's verdicts, best first: a row shows the worst of its graded batches.
FIDELITY_ORDER = ("identical", "near ties only", "unclassified", "mismatch")


def _fidelity(runs: Sequence[Run]) -> str:
    """The worst fidelity verdict over the row's graded batches (a baseline measured in the same
    invocation graded them); empty when none was graded."""
    graded = [run.fidelity for run in runs if run.fidelity in FIDELITY_ORDER and not run.synthetic]
    return max(graded, key=FIDELITY_ORDER.index) if graded else ""


def _fill_build_flags_keys(runs: Sequence[Run]) -> None:
    """Derive each run's build-flags key from the engine its stored result names, where missing."""
    missing = {run.pk: run for run in runs if not run.build_flags_key}
    if not missing:
        return
    stored = Run.objects.filter(pk__in=missing).values_list("pk", "raw_result__engine__build_flags")
    for pk, flags in stored:
        if isinstance(flags, list) and (key := build_flags_key(flags)):
            missing[pk].build_flags_key = key
            Run.objects.filter(pk=pk).update(build_flags_key=key)


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _backend(run: Run) -> str:
    return run.engine_backend or "unknown"


def _same_invocation(run: Run, baselines: Sequence[Run]) -> Run | None:
    """The baseline measured in the same runner invocation as a run, if it is among these.

    A result file's baseline section is stored as a run of its own; it is known by the engine
    and host it shares with the run and by the baseline mean the file's pairing used.
    """
    if run.job_id is not None:
        # A worker's job stores the baseline it measured beside itself with the job's id.
        for baseline in baselines:
            if _as_dict(baseline.provenance).get("measured_with_job") == run.job_id:
                return baseline
    raw = _as_dict(run.raw_result)
    claimed = _as_dict(raw.get("summary")).get("baseline_decode_tokens_per_second")
    if not isinstance(claimed, int | float) or isinstance(claimed, bool):
        return None
    system = _as_dict(run.provenance).get("system")
    for baseline in baselines:
        # The mean first: only a match loads the baseline's stored result.
        if (
            baseline.decode_mean is not None
            and math.isclose(baseline.decode_mean, claimed, rel_tol=1e-9)
            and _as_dict(baseline.provenance).get("system") == system
            and _as_dict(baseline.raw_result).get("engine") == raw.get("engine")
        ):
            return baseline
    return None


@dataclass(frozen=True)
class Pairing:
    """A row's baseline: its row and batch, or why there is none (then no speedup)."""

    entry: LeaderboardEntry | None = None
    run: Run | None = None
    note: str = ""


def _refusal(best: Run, baselines: Sequence[Run]) -> str:
    """Why none of the baseline's batches can be compared with a row's best batch."""
    if all(b.tps_definition != best.tps_definition for b in baselines):
        return "the baseline's tok/s has another definition: not comparable"
    same_definition = [b for b in baselines if b.tps_definition == best.tps_definition]
    if all(b.engine_backend != best.engine_backend for b in same_definition):
        theirs = ", ".join(sorted({_backend(b) for b in same_definition}))
        return (
            f"baseline measured on the {theirs} backend, this row on {_backend(best)}: "
            "not comparable"
        )
    return "baseline built with other engine build flags: not comparable"


def _pair(best: Run, *, config: Config, same: dict[str, Any]) -> Pairing:
    """The baseline batch a row's best batch is compared with: same tok/s definition, engine
    backend and build flags; the one of the same runner invocation first, else the best."""
    if config.baseline_id is None:
        return Pairing()
    baseline_entry = LeaderboardEntry.objects.filter(config_id=config.baseline_id, **same).first()
    # Stored results can be large (every request): loaded only where needed.
    baselines = list(Run.objects.filter(config_id=config.baseline_id, **same).defer("raw_result"))
    if baseline_entry is None or not baselines:
        return Pairing(note="no baseline measured on this hardware and release yet")
    _fill_build_flags_keys(baselines)
    comparable = [
        b
        for b in baselines
        if (b.tps_definition, b.engine_backend, b.build_flags_key)
        == (best.tps_definition, best.engine_backend, best.build_flags_key)
    ]
    if not comparable:
        return Pairing(note=_refusal(best, baselines))
    chosen = _same_invocation(best, comparable) or _best_run(comparable)
    return Pairing(entry=baseline_entry, run=chosen)


def _speedup(best: Run, baseline: Run) -> float | None:
    """The row's speedup as the runner defines it: over several depths (levels, categories), the
    geometric mean of their speedups (not the ratio of means pooled across them); else the plain
    ratio."""
    points = (best.raw_result or {}).get("points")
    if len(depth_points(points)) > 1 or len(category_points(points)) > 1:
        baseline_points = (baseline.raw_result or {}).get("points")
        if (depths := speedup_over_depths(points, baseline_points)) is not None:
            return depths
    return ratio(best.tokens_per_second, baseline.tokens_per_second)


def refresh_leaderboard_entry(
    *, config: Config, hardware: Hardware, engine_release: str
) -> LeaderboardEntry | None:
    """Recompute one leaderboard row from its runs, and the speedups of rows paired with it."""
    with transaction.atomic():
        entry, row_set = _refresh_entry(
            config=config, hardware=hardware, engine_release=engine_release
        )
        raise_board_version(row_set=row_set)
    return entry


def _refresh_entry(
    *, config: Config, hardware: Hardware, engine_release: str
) -> tuple[LeaderboardEntry | None, bool]:
    """The row recomputed, and whether the board's row set changed (a row came, went or moved
    between the ranking and the kept-off rows)."""
    same = {"hardware": hardware, "engine_release": engine_release}
    before = LeaderboardEntry.objects.filter(config=config, **same).values_list(*ROW_SET_FLAGS)
    row_set_before = before.first()
    runs = list(Run.objects.filter(config=config, **same).defer("raw_result"))
    if not runs:
        LeaderboardEntry.objects.filter(config=config, **same).delete()
        return None, row_set_before is not None
    _fill_build_flags_keys(runs)
    best = _best_run(runs)
    # One request has no spread: its interval (and stdev) would claim a certainty it lacks.
    low, high = best.ci95 if best.n >= 2 else (None, None)
    # Every release on the board has its build row (staleness and retirement are read there).
    build, _ = EngineBuild.objects.get_or_create(release=engine_release)
    stdev, median = (
        (best.decode_stdev, best.decode_median)
        if best.tps_definition == Run.Definition.DECODE
        else (best.e2e_stdev, best.e2e_median)
    )
    pooled = pooled_figures(runs, definition=best.tps_definition)
    pairing = _pair(best, config=config, same=same)
    entry, _ = LeaderboardEntry.objects.update_or_create(
        config=config,
        **same,
        defaults={
            "best_run": best,
            "runs_count": len(runs),
            "tps_definition": best.tps_definition,
            "tokens_per_second": best.tokens_per_second or 0.0,
            "n": best.n,
            "stdev": stdev if best.n >= 2 else None,
            "median": median,
            "ci95_low": low,
            "ci95_high": high,
            "pooled_mean": pooled.mean,
            "pooled_n": pooled.n,
            "pooled_ci95_low": pooled.ci95_low,
            "pooled_ci95_high": pooled.ci95_high,
            "end_to_end_tokens_per_second": best.e2e_mean,
            "acceptance_rate": best.acceptance_rate,
            "tau": best.tau,
            "lossless": _lossless(runs),
            "fidelity": _fidelity(runs),
            "synthetic": best.synthetic,
            "self_reported": best.self_reported,
            "degenerate": best.degenerate,
            "test_weights": _uses_test_weights(config),
            "peak_memory_bytes": best.peak_memory_bytes,
            "baseline_entry": pairing.entry,
            "baseline_run": pairing.run,
            "pairing_note": pairing.note,
            "speedup": _speedup(best, pairing.run) if pairing.run else None,
            "retired": build.retired,
            "updated_at": timezone.now(),
        },
    )
    row_set = row_set_before != tuple(getattr(entry, flag) for flag in ROW_SET_FLAGS)
    for paired in LeaderboardEntry.objects.filter(config__baseline=config, **same).select_related(
        "config"
    ):
        row_set |= _refresh_entry(config=paired.config, **same)[1]
    return entry, row_set
