"""The leaderboard rows: each (config, hardware, engine release) row is maintained from its
runs when they change (the seed's rule: the batch with the best average), with the speedup over
its paired baseline row; every change raises the board's version so cached pages are redone."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from leaderboard import board_version
from leaderboard.models import (
    Config,
    EngineBuild,
    Hardware,
    LeaderboardEntry,
    Run,
)
from runner.stats import ratio


def raise_board_version(*, layout: bool = False) -> None:
    """Tell cached leaderboard pages that rows changed; call after the change, in its transaction.

    `layout`: rows appeared, went or changed what keeps them off the ranking, so counts and
    filter choices change too (they are cached on this part of the counter alone).
    """
    board_version.raise_version(layout=layout)


def _best_run(runs: list[Run]) -> Run:
    """The seed's rule: the batch with the best average; degenerate batches only if nothing else."""
    candidates = [r for r in runs if not r.degenerate and r.tokens_per_second] or runs
    return max(candidates, key=lambda r: r.tokens_per_second or 0.0)


def _speedup(entry: LeaderboardEntry, baseline: LeaderboardEntry | None) -> float | None:
    if baseline is None or baseline.tps_definition != entry.tps_definition:
        return None
    return ratio(entry.tokens_per_second, baseline.tokens_per_second)


def refresh_leaderboard_entry(
    *, config: Config, hardware: Hardware, engine_release: str
) -> LeaderboardEntry | None:
    """Recompute one leaderboard row from its runs, and the speedups of rows paired with it."""
    with transaction.atomic():
        entry, layout = _refresh_entry(
            config=config, hardware=hardware, engine_release=engine_release
        )
        raise_board_version(layout=layout)
    return entry


# What decides whether a row is on the board and in the main ranking.
LAYOUT_FLAGS = ("synthetic", "self_reported", "degenerate", "retired")


def _refresh_entry(
    *, config: Config, hardware: Hardware, engine_release: str
) -> tuple[LeaderboardEntry | None, bool]:
    """The row recomputed, and whether the board's layout changed (a row came, went or moved
    between the ranking and the kept-off rows)."""
    same = {"hardware": hardware, "engine_release": engine_release}
    before = LeaderboardEntry.objects.filter(config=config, **same).values_list(*LAYOUT_FLAGS)
    layout_before = before.first()
    runs = list(Run.objects.filter(config=config, **same))
    if not runs:
        LeaderboardEntry.objects.filter(config=config, **same).delete()
        return None, layout_before is not None
    best = _best_run(runs)
    low, high = best.ci95
    # Every release on the board has its build row (staleness and retirement are read there).
    build, _ = EngineBuild.objects.get_or_create(release=engine_release)
    stdev, median = (
        (best.decode_stdev, best.decode_median)
        if best.tps_definition == Run.Definition.DECODE
        else (best.e2e_stdev, best.e2e_median)
    )
    baseline = (
        LeaderboardEntry.objects.filter(config_id=config.baseline_id, **same).first()
        if config.baseline_id
        else None
    )
    entry, _ = LeaderboardEntry.objects.update_or_create(
        config=config,
        **same,
        defaults={
            "best_run": best,
            "runs_count": len(runs),
            "tps_definition": best.tps_definition,
            "tokens_per_second": best.tokens_per_second or 0.0,
            "n": best.n,
            "stdev": stdev,
            "median": median,
            "ci95_low": low,
            "ci95_high": high,
            "end_to_end_tokens_per_second": best.e2e_mean,
            "acceptance_rate": best.acceptance_rate,
            "tau": best.tau,
            "lossless": best.lossless,
            "synthetic": best.synthetic,
            "self_reported": best.self_reported,
            "degenerate": best.degenerate,
            "peak_memory_bytes": best.peak_memory_bytes,
            "baseline_entry": baseline,
            "retired": build.retired,
            "updated_at": timezone.now(),
        },
    )
    entry.speedup = _speedup(entry, baseline)
    entry.save(update_fields=["speedup"])
    layout = layout_before != tuple(getattr(entry, flag) for flag in LAYOUT_FLAGS)
    for paired in LeaderboardEntry.objects.filter(config__baseline=config, **same).select_related(
        "config"
    ):
        layout |= _refresh_entry(config=paired.config, **same)[1]
    return entry, layout
