"""Which baseline batch a leaderboard row's speedup is measured against, and the speedup.

A row's baseline must have run on the same engine backend and build flags in the same tok/s
definition, and the baseline measured in the same runner invocation is preferred; otherwise the
pairing is refused and the row says why. The speedup is the runner's: over several depths or
categories the geometric mean of theirs, under the concurrency protocol the ratio of aggregate
tok/s at the lowest level, else the plain ratio. The best batch of either side is the verdicts'
one rule (`best_batch`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from leaderboard import verdicts
from leaderboard.models import Config, Hardware, Job, LeaderboardEntry, RequestRecord, Run
from leaderboard.stored_results import stored_requests, stored_result, stored_results
from leaderboard.verdicts import noise as noise_verdicts
from runner.pairing import category_points, depth_points, speedup_over_depths
from runner.stats import ratio


def build_flags_key(flags: Sequence[str] | None) -> str:
    """A short fingerprint of an engine's build flags (their order ignored); empty if none known."""
    if not flags:
        return ""
    return hashlib.sha256(json.dumps(sorted(flags)).encode()).hexdigest()[:16]


def best_batch(runs: list[Run], *, protocol: str, points: dict[int, object] | None = None) -> Run:
    """The config's best batch by the one rule (`verdicts.best_run`), a batch's noise judged by
    the rules of the row's flag (`verdicts.noise.noisy_batches`)."""
    samples = {
        run.pk: verdicts.run_sample(run, points=(points or {}).get(run.pk), protocol=protocol)
        for run in runs
    }
    noisy = batch_noise_flags(runs, protocol=protocol, samples=samples)
    best = verdicts.best_run(
        runs, sample=lambda run: samples[run.pk], protocol=protocol, noisy=lambda run: noisy[run.pk]
    )
    assert best is not None
    return best


def batch_noise_flags(
    runs: Sequence[Run], *, protocol: str, samples: dict[int, verdicts.Sample | None]
) -> dict[int, bool]:
    """Each batch's noisy flag by the row's rules, its stored requests read in one query."""
    by_run: dict[int, list] = {run.pk: [] for run in runs}
    if protocol in noise_verdicts.REPEATING_POINT_PROTOCOLS:
        records = (
            RequestRecord.objects.filter(run__in=[run.pk for run in runs], phase="measure")
            .order_by("run_id", "index")
            .values_list("run_id", *noise_verdicts.RECORD_FIELDS)
        )
        for run_id, *fields in records:
            by_run[run_id].append(fields)
    definitions = {run.pk: run.tps_definition for run in runs}
    return noise_verdicts.noisy_batches(
        runs,
        protocol=protocol,
        samples=samples,
        requests={
            pk: noise_verdicts.requests_of(rows, definition=definitions[pk])
            for pk, rows in by_run.items()
        },
    )


def fill_build_flags_keys(runs: Sequence[Run]) -> None:
    """Derive each run's build-flags key from the engine its stored result names, where missing."""
    missing = {run.pk: run for run in runs if not run.build_flags_key}
    if not missing:
        return
    for pk, stored in stored_results(missing).items():
        if key := build_flags_key(stored.build_flags):
            missing[pk].build_flags_key = key
            Run.objects.filter(pk=pk).update(build_flags_key=key)


def fill_prompt_sets(runs: Sequence[Run], *, config: Config, beside: Config | None = None) -> None:
    """Derive the prompts each quick-protocol run of a config sent (`verdicts.prompt_set`) from
    its stored records, where not yet derived: the plan they fall back on is the n-gram one for
    a run of an n-gram config or a baseline measured beside one (its provenance names the job,
    or `beside`, the config whose file brought it: then derived again)."""
    missing = {run.pk: run for run in runs if beside is not None or not run.prompt_set}
    if config.protocol != "quick" or not missing:
        return
    prompt = verdicts.canonical_protocol(config).get("prompt")
    stored = list(
        Run.objects.filter(pk__in=missing).values_list("pk", "provenance__measured_with_job")
    )
    requests = stored_requests(missing)
    measured_beside = dict(
        Job.objects.filter(pk__in=[job for _, job in stored if isinstance(job, int)]).values_list(
            "pk", "config__spec_label"
        )
    )
    for pk, job in stored:
        spec_label = _planned_with(
            job, config=config, beside=beside, measured_beside=measured_beside
        )
        found = verdicts.prompt_set(
            config.protocol,
            prompt,
            requests[pk],
            planned_token_ids=verdicts.learns_across_requests(spec_label or config.spec_label),
        )
        missing[pk].prompt_set = found
        Run.objects.filter(pk=pk).update(prompt_set=found)


def _planned_with(
    job: object, *, config: Config, beside: Config | None, measured_beside: dict[int, str]
) -> str | None:
    """The speculation whose plan a run's prompts fall back on: `beside`'s, else the job's it
    was measured beside (the config's own if that job is gone)."""
    spec_label = beside.spec_label if beside is not None else None
    if spec_label is None and isinstance(job, int):
        spec_label = measured_beside.get(job, config.spec_label)
    return spec_label


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
    stored = stored_result(run.pk)
    claimed = stored.baseline_decode_tokens_per_second
    if claimed is None:
        return None
    system = _as_dict(run.provenance).get("system")
    for baseline in baselines:
        # The mean first: only a match loads the baseline's stored result.
        if (
            baseline.decode_mean is not None
            and math.isclose(baseline.decode_mean, claimed, rel_tol=1e-9)
            and _as_dict(baseline.provenance).get("system") == system
            and stored_result(baseline.pk).engine == stored.engine
        ):
            return baseline
    return None


@dataclass(frozen=True)
class Pairing:
    """A row's baseline: its row and batch, or why there is none (then no speedup); disputed
    where a batch's own baseline disagrees with the site's (`verdicts.baseline_dispute`)."""

    entry: LeaderboardEntry | None = None
    run: Run | None = None
    note: str = ""
    disputed: bool = False


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


def brought_by_a_file(run: Run) -> bool:
    """Whether a baseline batch came in a result file beside its speculative config's (a host's
    job or an imported file: ``measured_with_job``), so the site's other batches judge it."""
    return "measured_with_job" in _as_dict(run.provenance)


def disputed_batches(
    batches: Sequence[Run], *, brought: Collection[int], protocol: str, points: dict[int, object]
) -> dict[int, str]:
    """Of one baseline config's comparable batches, those a result file brought (``brought``)
    whose interval disagrees with the site's other batches of it (`verdicts.baseline_dispute`),
    each with why in words. They are no one's denominator and not the baseline row's figure."""
    if len(batches) < 2:
        return {}  # Only one baseline batch: nothing to dispute it with.
    samples = {
        run.pk: verdicts.run_sample(run, points=points.get(run.pk), protocol=protocol)
        for run in batches
    }
    found = {}
    for run in batches:
        if run.pk not in brought:
            continue
        others = [samples[other.pk] for other in batches if other.pk != run.pk]
        if reason := verdicts.baseline_dispute(samples[run.pk], others):
            found[run.pk] = reason
    return found


def undisputed_baseline_batches(
    runs: Sequence[Run], *, protocol: str, points: dict[int, object]
) -> tuple[list[Run], bool]:
    """A baseline row's batches less those a file brought that the site's others dispute (each
    compared among its own tok/s definition, backend and build flags), and whether every batch
    is disputed (then all are kept, and the row is kept off: the site cannot tell which is
    right)."""
    groups: dict[tuple[str, str, str], list[Run]] = {}
    for run in runs:
        key = (run.tps_definition, run.engine_backend, run.build_flags_key)
        groups.setdefault(key, []).append(run)
    disputed: set[int] = set()
    for group in groups.values():
        brought = {run.pk for run in group if brought_by_a_file(run)}
        disputed |= set(disputed_batches(group, brought=brought, protocol=protocol, points=points))
    kept = [run for run in runs if run.pk not in disputed]
    return (kept, False) if kept else (list(runs), True)


class Release(TypedDict):
    """Where a row's batches ran: its hardware kind and engine release (its baseline's too)."""

    hardware: Hardware
    engine_release: str


def pair_baseline(
    best: Run,
    *,
    config: Config,
    same: Release,
    points: dict[int, object],
    runs: Sequence[Run],
) -> Pairing:
    """The baseline batch a row's best batch is compared with: same prompts, tok/s definition,
    engine backend and build flags; the one of the same runner invocation first, else the best. A
    baseline batch a file brought that the site's other batches of it dispute divides no row;
    where it is one of this row's own (`runs`), the pairing is disputed and the site's batches
    alone are the denominator."""
    if config.baseline_id is None:
        return Pairing()
    # Only the baseline's batches that sent the same prompts (`verdicts.prompt_set`): a
    # baseline on the protocol's text is another workload than one on token-id prompts.
    baseline_entry = LeaderboardEntry.objects.filter(
        config_id=config.baseline_id, prompt_set=best.prompt_set, **same
    ).first()
    baselines = _baseline_batches(config, config.baseline_id, same)
    measured = bool(baselines)
    baselines = [b for b in baselines if b.prompt_set == best.prompt_set]
    if baseline_entry is None or not baselines:
        return Pairing(note=_no_baseline_note(best, measured=measured))
    fill_build_flags_keys(baselines)
    comparable = [b for b in baselines if _measured_alike(b, best)]
    if not comparable:
        return Pairing(note=_refusal(best, baselines))
    if config.protocol == verdicts.CONCURRENCY:
        points.update(stored_points(comparable))
    return _chosen_baseline(
        best, comparable, entry=baseline_entry, protocol=config.protocol, points=points, runs=runs
    )


def _baseline_batches(config: Config, baseline_id: int, same: Release) -> list[Run]:
    """The baseline's batches on this hardware and release, their prompts derived."""
    # Stored results are loaded only where needed.
    baselines = list(Run.objects.filter(config_id=baseline_id, **same).defer("raw_result"))
    if config.protocol == "quick" and any(not b.prompt_set for b in baselines):
        fill_prompt_sets(baselines, config=baselines[0].config)
    return baselines


def _no_baseline_note(best: Run, *, measured: bool) -> str:
    """Why a row has no baseline: none measured here, or none on the same prompts."""
    if measured and best.prompt_set:
        words = "token-id prompts" if best.prompt_set == verdicts.TOKEN_ID_PROMPTS else "text"
        return f"no baseline measured on the same {words} here yet"
    return "no baseline measured on this hardware and release yet"


def _measured_alike(baseline: Run, best: Run) -> bool:
    """Same tok/s definition, engine backend and build flags."""
    return (baseline.tps_definition, baseline.engine_backend, baseline.build_flags_key) == (
        best.tps_definition,
        best.engine_backend,
        best.build_flags_key,
    )


def _chosen_baseline(
    best: Run,
    comparable: list[Run],
    *,
    entry: LeaderboardEntry,
    protocol: str,
    points: dict[int, object],
    runs: Sequence[Run],
) -> Pairing:
    """Of the baseline's batches comparable with a row's best batch, the one it divides by: the
    one of the same runner invocation first, else the best of those the site does not dispute;
    disputed where one of the row's own baseline batches is."""
    own = [found for run in runs if (found := _same_invocation(run, comparable)) is not None]
    brought = _brought(comparable, own=own)
    disputed = disputed_batches(comparable, brought=brought, protocol=protocol, points=points)
    site = [b for b in comparable if b.pk not in disputed]
    if mine := [b for b in own if b.pk in disputed]:
        chosen = best_batch(site, protocol=protocol, points=points) if site else None
        return Pairing(entry=entry, run=chosen, note=disputed[mine[0].pk][:200], disputed=True)
    return _site_pairing(best, site, entry=entry, protocol=protocol, points=points)


def _brought(comparable: list[Run], *, own: list[Run]) -> set[int]:
    """The batches files brought: a row's own baseline, and any measured beside another row."""
    return {b.pk for b in comparable if brought_by_a_file(b)} | {b.pk for b in own}


def _site_pairing(
    best: Run,
    site: list[Run],
    *,
    entry: LeaderboardEntry,
    protocol: str,
    points: dict[int, object],
) -> Pairing:
    """The undisputed batch a row divides by: the best batch's own invocation's, else the best."""
    if not site:
        return Pairing(
            entry=entry,
            note="the site's measurements of the baseline disagree: no speedup until they agree",
        )
    chosen = _same_invocation(best, site) or best_batch(site, protocol=protocol, points=points)
    return Pairing(entry=entry, run=chosen)


def stored_points(runs: Sequence[Run]) -> dict[int, object]:
    """Each run's stored points, by run id."""
    return {
        pk: stored.stored_points for pk, stored in stored_results(run.pk for run in runs).items()
    }


def paired_speedup(
    best: Run, baseline: Run, *, protocol: str, points: dict[int, object]
) -> float | None:
    """The row's speedup as the runner defines it: over several depths (categories), the
    geometric mean of their speedups (not the ratio of means pooled across them); under the
    concurrency protocol the ratio of aggregate tok/s at the lowest level; else the plain ratio."""
    if protocol == verdicts.CONCURRENCY:
        pair = verdicts.lowest_level_pair(points.get(best.pk), points.get(baseline.pk))
        if pair is None or pair[1] is None:
            return None
        return ratio(pair[0].mean, pair[1].mean)
    stored = stored_results([best.pk, baseline.pk])
    own = stored[best.pk].stored_points if best.pk in stored else None
    if len(depth_points(own)) > 1 or len(category_points(own)) > 1:
        reference = stored[baseline.pk].stored_points if baseline.pk in stored else None
        if (depths := speedup_over_depths(own, reference)) is not None:
            return depths
    return ratio(best.tokens_per_second, baseline.tokens_per_second)
