"""The leaderboard rows: each (config, hardware, engine release) row is maintained from its
runs when they change, with the speedup over its paired baseline; every change raises the
board's version so cached pages are redone.

A row keeps the seed's rule (the batch with the best average) and what discloses it: how many
batches it was the best of and the pooled figures over all of them. It is lossless only if no
compared batch diverged, and its fidelity badge agrees (`verdicts.fidelity`). Its baseline
batch is chosen by `services.pairing` (a disputed one keeps it off the rankings); a baseline
row leaves out the batches a file brought that the site's others dispute. What the
verdicts decide of it (`leaderboard.verdicts`: its ranking, the config's sample and interval, the
speedup's interval, noisy, memorised, the crossover) is stored with it, and every ranking a
change touched is ranked again (`rerank`), so pages read ranks and ties, never compute them.
Rows of models marked as test weights stay off the main ranking; marking them (or retiring a
build, `services.registry`) ranks their rankings again (`rerank_all`), so a kept-off row never
keeps a rank.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from types import SimpleNamespace
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard import verdicts
from leaderboard.models import (
    Config,
    EngineBuild,
    Hardware,
    LeaderboardEntry,
    ModelFile,
    RankingSummary,
    RequestRecord,
    Run,
)
from leaderboard.services.configs import relabel_measured_configs
from leaderboard.services.pairing import (
    Pairing,
    Release,
    batch_noise_flags,
    best_batch,
    build_flags_key,
    fill_build_flags_keys,
    fill_prompt_sets,
    pair_baseline,
    paired_speedup,
    stored_points,
    undisputed_baseline_batches,
)
from leaderboard.stored_results import stored_requests
from leaderboard.verdicts import rows as row_verdicts
from leaderboard.web import board_version

__all__ = [
    "build_flags_key",
    "mark_test_weights",
    "raise_board_version",
    "refresh_leaderboard_entry",
    "rerank_all",
    "summarize_every_ranking",
]

# What decides whether a row is on the board and in the main ranking: the flags that keep a row
# off every ranking (the verdicts' rule).
ROW_SET_FLAGS = verdicts.KEPT_OFF_FLAGS


def raise_board_version(*, row_set: bool = False, rankings: Iterable[str] | None = None) -> None:
    """Tell cached leaderboard pages that rows changed; call after the change, in its transaction.

    `row_set`: rows appeared, went or changed what keeps them off the ranking, so counts and
    filter choices change too (they are cached on this part of the counter alone).
    `rankings`: the only rankings whose rows changed; without it, anywhere.
    """
    board_version.raise_version(row_set=row_set, rankings=rankings)


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
        going = rows.filter(marked, test_weights=False)
        coming = rows.exclude(marked).filter(test_weights=True)
        touched = set(going.values_list("ranking_key", flat=True))
        touched |= set(coming.values_list("ranking_key", flat=True))
        moved = going.update(test_weights=True)
        moved += coming.update(test_weights=False)
        if moved:
            # A row that leaves or rejoins its ranking changes every rank in it.
            rerank_all(ranking_keys=touched)
            raise_board_version(row_set=True)
    return moved


def _uses_test_weights(config: Config) -> bool:
    ids = [pk for pk in (config.target_id, config.draft_id) if pk is not None]
    return ModelFile.objects.filter(pk__in=ids, test_weights=True).exists()


def pooled_figures(runs: Sequence[Run], *, definition: str) -> row_verdicts.Pooled:
    """The pooled view over every batch of one tok/s definition (`verdicts.rows.pooled`), its
    measured requests' tok/s read in one query."""
    field = (
        "decode_tokens_per_second"
        if definition == Run.Definition.DECODE
        else "end_to_end_tokens_per_second"
    )
    mine = [run for run in runs if run.tps_definition == definition]
    per_run: dict[int, list[float | None]] = defaultdict(list)
    records = RequestRecord.objects.filter(run__in=mine, phase="measure").order_by()
    for run_id, value in records.values_list("run_id", field):
        per_run[run_id].append(value)
    return row_verdicts.pooled(mine, requests=per_run)


def refresh_leaderboard_entry(
    *, config: Config, hardware: Hardware, engine_release: str
) -> LeaderboardEntry | None:
    """Recompute one leaderboard row from its runs, and the speedups of rows paired with it;
    then the ranks and ties of every ranking a changed row is in (`verdicts`)."""
    with transaction.atomic():
        rankings: dict[str, set[str]] = {}
        entry, row_set = _refresh_entry(
            config=config, hardware=hardware, engine_release=engine_release, rankings=rankings
        )
        # Only the targets of the rows refreshed can have other summaries in their rankings.
        for key, targets in rankings.items():
            if key != board_version.KEPT_OFF:  # the kept-off rows are in no ranking's order
                rerank(ranking_key=key, targets=targets)
        raise_board_version(row_set=row_set, rankings=rankings)
    return entry


@dataclass(frozen=True)
class _Figures:
    """What the verdicts decide of a row from its runs, before it is stored."""

    best: Run
    best_sample: verdicts.Sample | None
    definition: str
    config: verdicts.Uncertainty


def _figures(config: Config, runs: list[Run], points: dict[int, object]) -> _Figures:
    protocol = config.protocol

    def sample(run: Run) -> verdicts.Sample | None:
        return verdicts.run_sample(run, points=points.get(run.pk), protocol=protocol)

    best = best_batch(runs, protocol=protocol, points=points)
    definition = (
        Run.Definition.AGGREGATE if protocol == verdicts.CONCURRENCY else best.tps_definition
    )
    # The config's samples: its clean batches of the best one's definition (degenerate ones
    # measured something else).
    alike = [
        found
        for run in runs
        if run.tps_definition == best.tps_definition and not run.degenerate
        if (found := sample(run)) is not None
    ]
    unit = verdicts.ROUNDS if protocol == verdicts.CONCURRENCY else verdicts.REQUESTS
    best_sample = sample(best)
    return _Figures(
        best=best,
        best_sample=best_sample,
        definition=definition,
        config=verdicts.config_uncertainty(alike, best=best_sample, unit=unit),
    )


def _noisy(config: Config, best: Run, sample: verdicts.Sample | None) -> bool:
    """Whether the row's best batch is noisy (`verdicts.noise`: an outlier request, the row's
    interval reaching 0, or a wide spread), as its job and run pages say and as the best batch
    was chosen."""
    return batch_noise_flags([best], protocol=config.protocol, samples={best.pk: sample})[best.pk]


def _baseline_noisy(config: Config, pairing: Pairing, points: dict[int, object]) -> bool:
    """Whether the baseline batch the row's speedup divides by is noisy, by the rules that flag
    the row's own best batch (`_noisy`): the speedup rests on it."""
    baseline = pairing.run
    if baseline is None:
        return False
    sample = verdicts.run_sample(baseline, points=points.get(baseline.pk), protocol=config.protocol)
    return _noisy(config, baseline, sample)


def _refresh_entry(
    *, config: Config, hardware: Hardware, engine_release: str, rankings: dict[str, set[str]]
) -> tuple[LeaderboardEntry | None, bool]:
    """The config's rows on a hardware kind and release recomputed (one for each set of prompts
    its batches sent, `verdicts.prompt_set`: a workload of its own), the one of its newest
    batch returned, and whether the board's row set changed (a row came, went or moved between
    the ranking and the kept-off rows); `rankings` collects the ranking keys touched, each with
    the targets of its rows that changed."""
    same: Release = {"hardware": hardware, "engine_release": engine_release}
    before = _rows_before(config, same=same, rankings=rankings)
    runs = list(Run.objects.filter(config=config, **same).defer("raw_result"))
    fill_build_flags_keys(runs)
    fill_prompt_sets(runs, config=config)
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.prompt_set, []).append(run)
    if gone := set(before) - set(groups):
        LeaderboardEntry.objects.filter(config=config, prompt_set__in=gone, **same).delete()
    row_set = set(before) != set(groups)
    entries = {}
    for prompts, batches in groups.items():
        entry = _refresh_row(config, batches, prompts=prompts, same=same, rankings=rankings)
        entries[prompts] = entry
        row_set |= _moved(before.get(prompts), entry)
    row_set |= _refresh_paired(config, same=same, rankings=rankings)
    # The row of the newest batch (runs are ordered by when they were recorded).
    return (entries[runs[-1].prompt_set] if runs else None), row_set


def _rows_before(
    config: Config, *, same: Release, rankings: dict[str, set[str]]
) -> dict[str, tuple]:
    """The config's rows as they stood (their row-set flags and ranking key, by prompts), each
    ranking they stood in collected in `rankings`."""
    before = {
        found[0]: found[1:]
        for found in LeaderboardEntry.objects.filter(config=config, **same).values_list(
            "prompt_set", *ROW_SET_FLAGS, "ranking_key"
        )
    }
    for *_, ranking_key in before.values():
        if ranking_key:
            rankings.setdefault(ranking_key, set()).add(config.target_name)
    return before


def _moved(flags: tuple | None, entry: LeaderboardEntry) -> bool:
    """Whether a row came or moved between the ranking and the kept-off rows."""
    return flags is None or flags[:-1] != tuple(getattr(entry, flag) for flag in ROW_SET_FLAGS)


def _refresh_paired(config: Config, *, same: Release, rankings: dict[str, set[str]]) -> bool:
    """The rows of the configs paired with this baseline recomputed; whether the row set
    changed."""
    paired_configs = {
        paired.config_id: paired.config
        for paired in LeaderboardEntry.objects.filter(
            config__baseline=config, **same
        ).select_related("config")
    }
    row_set = False
    for paired in paired_configs.values():
        row_set |= _refresh_entry(config=paired, **same, rankings=rankings)[1]
    return row_set


def _refresh_row(
    config: Config,
    runs: list[Run],
    *,
    prompts: str,
    same: Release,
    rankings: dict[str, set[str]],
) -> LeaderboardEntry:
    """One row of a config, from its batches that sent one set of prompts: what the verdicts
    decide of it (`verdicts.rows.row_figures`) and its pairing, written as they are."""
    points = stored_points(runs) if config.protocol == verdicts.CONCURRENCY else {}
    every_batch_disputed = False
    if config.baseline_id is None:
        # A batch a file brought that the site's others dispute is not the baseline's figure,
        # so it moves no row's denominator (services.pairing).
        runs, every_batch_disputed = undisputed_baseline_batches(
            runs, protocol=config.protocol, points=points
        )
    figures = _figures(config, runs, points)
    pairing = pair_baseline(figures.best, config=config, same=same, points=points, runs=runs)
    evidence = _row_evidence(
        config, runs, figures=figures, pairing=pairing, points=points, same=same, prompts=prompts
    )
    row = row_verdicts.row_figures(evidence)
    rankings.setdefault(row.ranking_key, set()).add(config.target_name)
    # Every release on the board has its build row (staleness and retirement are read there).
    build, _ = EngineBuild.objects.get_or_create(release=same["engine_release"])
    disputed_note = "its batches disagree beyond their intervals: not offered until they agree"
    entry, _ = LeaderboardEntry.objects.update_or_create(
        config=config,
        prompt_set=prompts,
        **same,
        defaults=row.columns()
        | {
            "target_name": config.target_name,
            "spec_label": config.spec_label,
            "n_max": config.n_max,
            "best_run": figures.best,
            "runs_count": len(runs),
            "test_weights": _uses_test_weights(config),
            "baseline_entry": pairing.entry,
            "baseline_run": pairing.run,
            "pairing_note": pairing.note or (disputed_note if every_batch_disputed else ""),
            "baseline_disputed": pairing.disputed or every_batch_disputed,
            "retired": build.retired,
            "updated_at": timezone.now(),
        },
    )
    if any(getattr(entry, flag) for flag in ROW_SET_FLAGS):
        # Shown among the kept-off rows (one that moves there or back changes the row set too).
        rankings.setdefault(board_version.KEPT_OFF, set())
    return entry


def _row_evidence(
    config: Config,
    runs: list[Run],
    *,
    figures: _Figures,
    pairing: Pairing,
    points: dict[int, object],
    same: Release,
    prompts: str,
) -> row_verdicts.RowEvidence:
    """What the verdicts decide a row's figures from, read once: its best batch's requests
    only where a verdict reads them (`verdicts.rows.reads_requests`)."""
    best, baseline = figures.best, pairing.run
    return row_verdicts.RowEvidence(
        config=config,
        hardware_id=same["hardware"].pk,
        gpu_name=same["hardware"].label,
        engine_release=same["engine_release"],
        prompt_set=prompts,
        best=best,
        best_sample=figures.best_sample,
        definition=figures.definition,
        config_interval=figures.config,
        pooled=pooled_figures(runs, definition=best.tps_definition),
        outputs=verdicts.outputs_verdict(runs),
        noisy=_noisy(config, best, figures.best_sample),
        baseline=baseline,
        speedup=(
            paired_speedup(best, baseline, protocol=config.protocol, points=points)
            if baseline
            else None
        ),
        baseline_noisy=_baseline_noisy(config, pairing, points),
        points=points.get(best.pk),
        baseline_points=points.get(baseline.pk) if baseline else None,
        requests=(
            stored_requests([best.pk])[best.pk] if row_verdicts.reads_requests(config) else None
        ),
    )


# What a ranking reads of each of its rows when it is decided again (`rerank`): values, not
# model instances, and no join (a ranking of 5,000 rows is read on every run recorded in it).
_RANKING_FIELDS = (
    "pk",
    "tokens_per_second",
    "config_mean",
    "config_stdev",
    "config_n",
    "rank",
    "like_leader",
    "like_above",
    "spec_label",
    *verdicts.KEPT_OFF_FLAGS,
)
# Where a row's standing, spec label and kept-off flags are among those values.
_STANDING = slice(_RANKING_FIELDS.index("rank"), _RANKING_FIELDS.index("like_above") + 1)
_SPEC_LABEL = _RANKING_FIELDS.index("spec_label")
_KEPT_OFF = slice(_SPEC_LABEL + 1, _SPEC_LABEL + 1 + len(verdicts.KEPT_OFF_FLAGS))
# What its summaries count of the rows of a target (`ranking_summaries`).
_SUMMARY_FIELDS = (
    "pk",
    "target_name",
    "hardware_id",
    "ranking_label",
    "speedup",
    "n_max",
    "spec_label",
    "noisy",
    "baseline_noisy",
)


def rerank(*, ranking_key: str, targets: Collection[str] | None = None) -> int:
    """Decide again the ranks and ties of one ranking's rows (`verdicts.standings`), and what the
    ranking holds of each target (`RankingSummary`); returns how many rows changed rank or ties.
    Rows that do not compete (`verdicts.competes`) carry no rank. `targets`: the only targets
    whose rows changed (a recorded run's, whose rows all share its target): only their
    summaries can change; None, every target's."""
    rows = list(
        LeaderboardEntry.objects.filter(ranking_key=ranking_key).values_list(*_RANKING_FIELDS)
    )
    found = _standings(rows)
    unranked = (None, None, None)
    changed = [
        LeaderboardEntry(pk=row[0], rank=rank, like_leader=like_leader, like_above=like_above)
        for row in rows
        if row[_STANDING] != (standing := found.get(row[0], unranked))
        for rank, like_leader, like_above in (standing,)
    ]
    LeaderboardEntry.objects.bulk_update(changed, ["rank", "like_leader", "like_above"])
    summary_rows = _summary_rows(ranking_key, targets=targets, ranks=found)
    answers = _store_summaries(
        ranking_key, ranking_summaries(ranking_key, summary_rows), targets=targets
    )
    if answers:
        # What the front page's first answers name may change with these summaries.
        raise_board_version(rankings=answers)
    return len(changed)


def _standings(rows: list[tuple]) -> dict[int, tuple[int, bool | None, bool | None]]:
    """The rank and ties of each competing row of a ranking, by row id."""
    competing = [
        row
        for row in rows
        if verdicts.competes_as(kept_off=row[_KEPT_OFF], spec_label=row[_SPEC_LABEL])
    ]
    return verdicts.standing_columns(
        ids=[row[0] for row in competing],
        figures=[row[1] for row in competing],
        samples=verdicts.SampleColumns.of_summaries(
            [row[2] for row in competing],
            [row[3] for row in competing],
            [row[4] for row in competing],
        ),
    )


def _summary_rows(
    ranking_key: str,
    *,
    targets: Collection[str] | None,
    ranks: dict[int, tuple[int, bool | None, bool | None]],
) -> list[SimpleNamespace]:
    """The ranking's rows (only `targets`' where given) as `ranking_summaries` reads them, each
    with its new rank."""
    summarized = LeaderboardEntry.objects.filter(ranking_key=ranking_key)
    if targets is not None:
        summarized = summarized.filter(target_name__in=targets)
    return [
        SimpleNamespace(
            **dict(zip(_SUMMARY_FIELDS, values, strict=True)),
            rank=ranks.get(values[0], (None, None, None))[0],
        )
        for values in summarized.values_list(*_SUMMARY_FIELDS)
    ]


def ranking_summaries(ranking_key: str, rows: Iterable[Any]) -> list[RankingSummary]:
    """What a ranking holds of each target, from its rows as ranked (each with `target_name`,
    `hardware_id`, `ranking_label`, `rank`, `speedup`, `n_max`, `spec_label`, `noisy` and
    `baseline_noisy`): its rows, its speculative rows that compete and have a speedup and the
    speedup their draft answer leads with (`verdicts.leading_speedup`), the n_max values that
    compete and every spec label."""
    found: dict[str, RankingSummary] = {}
    drafts: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        summary = found.get(row.target_name)
        if summary is None:
            summary = found[row.target_name] = RankingSummary(
                ranking_key=ranking_key,
                target_name=row.target_name,
                hardware_id=row.hardware_id,
                ranking_label=row.ranking_label,
                rows=0,
                drafts=0,
                n_max_values=set(),
                spec_labels=set(),
            )
        summary.rows += 1
        summary.spec_labels.add(row.spec_label)
        # A rank is given to the rows that compete, and never to a baseline.
        if row.rank is not None:
            if row.speedup is not None:
                summary.drafts += 1
                drafts[row.target_name].append(row)
            if row.n_max is not None:
                summary.n_max_values.add(row.n_max)
    for summary in found.values():
        summary.n_max_values = sorted(summary.n_max_values)
        summary.sweep = len(summary.n_max_values)
        summary.spec_labels = sorted(summary.spec_labels)
        summary.lead_speedup = verdicts.leading_speedup(drafts[summary.target_name])
    return list(found.values())


_SUMMARY_COLUMNS = (
    "hardware_id",
    "ranking_label",
    "rows",
    "drafts",
    "n_max_values",
    "spec_labels",
    "sweep",
    "lead_speedup",
)


def _answer_state(drafts: int, lead: float | None) -> object:
    """What a ranking's summary tells the front page's first answer of its GPU kind and target
    (`verdicts.answer_workloads`): nothing without drafts; that a draft is faster than none,
    whatever its speedup; else its leading speedup (the least slow workload is named)."""
    if not drafts or lead is None:
        return None
    return True if verdicts.is_faster_than_none(lead) else lead


def _changed_answers(stored: dict[str, list], summaries: list[RankingSummary]) -> set[str]:
    """The answer keys of the GPU kinds and targets whose first answer the new summaries move."""
    drafts, lead = _SUMMARY_COLUMNS.index("drafts"), _SUMMARY_COLUMNS.index("lead_speedup")
    before = {
        target: (values[0], _answer_state(values[drafts], values[lead]))
        for target, values in stored.items()
    }
    after = {
        summary.target_name: (
            summary.hardware_id,
            _answer_state(summary.drafts, summary.lead_speedup),
        )
        for summary in summaries
    }
    answers = set()
    for target in before.keys() | after.keys():
        hardware_id, old = before.get(target, (None, None))
        new_hardware_id, new = after.get(target, (hardware_id, None))
        if old != new:
            answers.add(board_version.answer_key(new_hardware_id, target))
    return answers


def _store_summaries(
    ranking_key: str, summaries: list[RankingSummary], *, targets: Collection[str] | None = None
) -> set[str]:
    """Write the summaries of a ranking that changed (most recorded runs change none), and drop
    those of targets it no longer holds; `targets`: only these targets' summaries. Returns the
    answer keys (`board_version.answer_key`) of the GPU kinds and targets whose first answer may
    name other workloads now."""
    kept = RankingSummary.objects.filter(ranking_key=ranking_key)
    if targets is not None:
        kept = kept.filter(target_name__in=targets)
    stored = {
        target: values for target, *values in kept.values_list("target_name", *_SUMMARY_COLUMNS)
    }
    answers = _changed_answers(stored, summaries)
    gone = set(stored) - {summary.target_name for summary in summaries}
    if gone:
        RankingSummary.objects.filter(ranking_key=ranking_key, target_name__in=gone).delete()
    changed = [
        summary
        for summary in summaries
        if stored.get(summary.target_name)
        != [getattr(summary, column) for column in _SUMMARY_COLUMNS]
    ]
    RankingSummary.objects.bulk_create(
        changed,
        update_conflicts=True,
        unique_fields=["ranking_key", "target_name"],
        update_fields=[column.removesuffix("_id") for column in _SUMMARY_COLUMNS],
    )
    return answers


def summarize_every_ranking() -> int:
    """Decide every ranking's summaries again from its stored rows and ranks (after rows were
    written outside the services, as bench/site_load.py's seed does); returns how many."""
    fields = ("ranking_key", "rank", *_SUMMARY_FIELDS)
    stored = 0
    with transaction.atomic():
        RankingSummary.objects.all().delete()
        ordered = (
            LeaderboardEntry.objects.exclude(ranking_key="")
            .order_by("ranking_key")
            .values_list(*fields)
            .iterator(chunk_size=20_000)
        )
        rows = (SimpleNamespace(**dict(zip(fields, values, strict=True))) for values in ordered)
        batch: list[RankingSummary] = []
        for key, ranking in itertools.groupby(rows, key=attrgetter("ranking_key")):
            batch += ranking_summaries(key, ranking)
            if len(batch) >= 5_000:
                stored += len(RankingSummary.objects.bulk_create(batch))
                batch = []
        stored += len(RankingSummary.objects.bulk_create(batch))
    return stored


def rerank_all(*, ranking_keys: Iterable[str]) -> int:
    """Rerank each of these rankings (after rows joined or left them: test weights marked, a
    build retired); returns how many rows changed."""
    return sum(rerank(ranking_key=key) for key in sorted(set(ranking_keys)) if key)


def refresh_verdicts() -> int:
    """Recompute every leaderboard row and its ranking (after an upgrade that changed a rule),
    and make the rows of runs that have none (after a migration moved runs between configs,
    as 0019 does): returns the number of rows."""
    done = 0
    # Labels first: a label names every option a config sets (verdicts.series).
    relabel_measured_configs()
    rows = list(
        LeaderboardEntry.objects.order_by("config__baseline_id", "id")
        .values_list("config_id", "hardware_id", "engine_release")
        .distinct()
    )
    missing = set(
        Run.objects.values_list("config_id", "hardware_id", "engine_release").distinct()
    ) - set(rows)
    baselines = set(Config.objects.filter(baseline=None).values_list("pk", flat=True))
    # A baseline's row before the rows paired with it, which read its speed.
    rows += sorted(missing, key=lambda row: (row[0] not in baselines, row))
    for config_id, hardware_id, release in rows:
        refresh_leaderboard_entry(
            config=Config.objects.get(pk=config_id),
            hardware=Hardware.objects.get(pk=hardware_id),
            engine_release=release,
        )
        done += 1
    return done
