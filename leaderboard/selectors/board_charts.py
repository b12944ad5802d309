"""The front page's speedup chart and the /hardware/ page's comparison of GPUs for a target.

It owns `speedup_chart` (speculative configs of one target on one hardware kind, by speedup
over their paired baselines, with each speedup's 95% interval), `speedup_interval` (that
interval, from the row's batch and its baseline batch) and `hardware_comparison` (per hardware
kind, for one target and protocol: the best decode tok/s and the best speedup, with intervals).

Only rows that compete in the main ranking are drawn (`selectors.board.RANKED`: no synthetic,
test-weight, self-reported, degenerate or retired rows), and a chart never mixes tok/s
definitions: the front chart keeps the definition most of the selected rows have, and says how
many rows of the other it left out; the GPU comparison is decode tok/s only. A depth row's
speedup is the geometric mean of per-depth ratios, which has no single interval: it is drawn
without one, as the compare page draws such rows.
"""

from __future__ import annotations

import math
from collections import Counter

from django.db.models import Count, QuerySet

from leaderboard.models import LeaderboardEntry, Run
from leaderboard.selectors.board import RANKED
from leaderboard.selectors.definitions import is_across_depths, protocol_summary
from runner.stats import t_critical_95

# The front chart's bars: the fastest configs by speedup (the table below has every row).
SPEEDUP_CHART_LIMIT = 20


def speedup_interval(
    *,
    speedup: float | None,
    mean: float | None,
    stdev: float | None,
    n: int,
    baseline_mean: float | None,
    baseline_stdev: float | None,
    baseline_n: int,
) -> tuple[float, float] | None:
    """A 95% interval of a speedup (mean / baseline mean) from the two batches, by the delta
    method on the log of the ratio with Welch's degrees of freedom; None with fewer than two
    requests on either side or a missing figure."""
    figures = (speedup, mean, stdev, baseline_mean, baseline_stdev)
    if any(value is None for value in figures) or n < 2 or baseline_n < 2:
        return None
    if speedup <= 0 or mean <= 0 or baseline_mean <= 0:
        return None
    own = (stdev / mean) ** 2 / n
    base = (baseline_stdev / baseline_mean) ** 2 / baseline_n
    if own + base == 0:
        return speedup, speedup
    df = (own + base) ** 2 / (own**2 / (n - 1) + base**2 / (baseline_n - 1))
    # Welch's df is not a whole number; t is interpolated between whole ones (1/df), so two
    # near-identical rows never get intervals a t(1) and a t(2) apart.
    half = t_critical_95(max(1.0, df)) * math.sqrt(own + base)  # type: ignore[arg-type]
    return speedup * math.exp(-half), speedup * math.exp(half)


def _baseline_batch(entry: LeaderboardEntry) -> tuple[float | None, float | None, int]:
    """The mean, stdev and n of the baseline batch a row's speedup is measured against."""
    run: Run | None = entry.baseline_run
    if run is not None:
        decode = run.tps_definition == Run.Definition.DECODE
        return (
            run.tokens_per_second,
            run.decode_stdev if decode else run.e2e_stdev,
            run.n,
        )
    paired = entry.baseline_entry
    if paired is not None:
        return paired.tokens_per_second, paired.stdev, paired.n
    return None, None, 0


def entry_speedup_interval(entry: LeaderboardEntry) -> tuple[float, float] | None:
    """A row's speedup interval; None for depth rows (a geometric mean over depths)."""
    if entry.speedup is None or is_across_depths(entry.config):
        return None
    mean, stdev, n = _baseline_batch(entry)
    return speedup_interval(
        speedup=entry.speedup,
        mean=entry.tokens_per_second,
        stdev=entry.stdev,
        n=entry.n,
        baseline_mean=mean,
        baseline_stdev=stdev,
        baseline_n=n,
    )


def _speculative_rows(**filters: str) -> QuerySet[LeaderboardEntry]:
    return (
        LeaderboardEntry.objects.filter(RANKED, speedup__isnull=False, **filters)
        .exclude(config__spec_label="none")
        .select_related("config", "hardware", "baseline_entry", "baseline_run")
    )


def _filtered(*, spec_type: str, protocol: str) -> dict[str, str]:
    filters = {}
    if spec_type:
        filters["config__spec_types__name"] = spec_type
    if protocol:
        filters["config__protocol"] = protocol
    return filters


def _chart_pair(*, target: str, hardware: str, filters: dict[str, str]) -> tuple[str, str] | None:
    """The selected target and hardware, the unselected one(s) filled in with the pair that has
    the most speculative rows with a speedup."""
    rows = _speculative_rows(**filters)
    if target:
        rows = rows.filter(config__target_name=target)
    if hardware:
        rows = rows.filter(hardware__slug=hardware)
    best = (
        rows.values("config__target_name", "hardware__slug")
        .annotate(rows=Count("id"))
        .order_by("-rows", "config__target_name", "hardware__slug")
        .first()
    )
    return (best["config__target_name"], best["hardware__slug"]) if best else None


def _config_label(entry: LeaderboardEntry) -> str:
    config = entry.config
    parts = [config.spec_label.replace(",", " + ")]
    if config.n_max:
        parts.append(f"n_max {config.n_max}")
    parts.append(protocol_summary(config))
    return " · ".join(parts)


def speedup_chart(
    *, target: str = "", hardware: str = "", spec_type: str = "", protocol: str = ""
) -> dict | None:
    """The front chart: speculative configs of one target on one hardware kind, fastest speedup
    first, with 95% intervals; None when no ranked row has a speedup."""
    filters = _filtered(spec_type=spec_type, protocol=protocol)
    pair = _chart_pair(target=target, hardware=hardware, filters=filters)
    if pair is None:
        return None
    target_name, slug = pair
    rows = list(
        _speculative_rows(config__target_name=target_name, hardware__slug=slug, **filters)
        .distinct()
        .order_by("-speedup", "id")
    )
    definitions = Counter(entry.tps_definition for entry in rows)
    # The definition most rows have; decode first on a tie (it is what our workers measure).
    definition = max(definitions, key=lambda d: (definitions[d], d == Run.Definition.DECODE))
    kept = [entry for entry in rows if entry.tps_definition == definition]
    shown = kept[:SPEEDUP_CHART_LIMIT]
    points = []
    for entry in shown:
        interval = entry_speedup_interval(entry)
        points.append(
            {
                "key": entry.config.key,
                "label": _config_label(entry),
                "speedup": entry.speedup,
                "ci95_low": interval[0] if interval else None,
                "ci95_high": interval[1] if interval else None,
                "tokens_per_second": entry.tokens_per_second,
                "n": entry.n,
                "engine_release": entry.engine_release,
                "across_depths": is_across_depths(entry.config),
            }
        )
    return {
        "target": target_name,
        "hardware": slug,
        "gpu_name": shown[0].hardware.gpu_name,
        "definition": definition,
        "chosen": {"target": bool(target), "hardware": bool(hardware)},
        "other_definition_rows": len(rows) - len(kept),
        "more_rows": len(kept) - len(shown),
        "points": points,
    }


def comparison_targets() -> list[str]:
    """Targets with ranked decode rows, the one measured on the most hardware kinds first."""
    rows = (
        LeaderboardEntry.objects.filter(RANKED, tps_definition=Run.Definition.DECODE)
        .values("config__target_name")
        .annotate(kinds=Count("hardware", distinct=True))
        .order_by("-kinds", "config__target_name")
    )
    return [row["config__target_name"] for row in rows]


def comparison_protocols(*, target: str) -> list[str]:
    """A target's protocols with ranked decode rows, the one on the most hardware kinds first."""
    rows = (
        LeaderboardEntry.objects.filter(
            RANKED, tps_definition=Run.Definition.DECODE, config__target_name=target
        )
        .values("config__protocol")
        .annotate(kinds=Count("hardware", distinct=True))
        .order_by("-kinds", "config__protocol")
    )
    return [row["config__protocol"] for row in rows]


def hardware_comparison(*, target: str, protocol: str) -> dict:
    """Per hardware kind, for one target and protocol (decode tok/s): the fastest row with its
    95% interval and the best speedup with its interval, fastest hardware first."""
    entries = (
        LeaderboardEntry.objects.filter(
            RANKED,
            tps_definition=Run.Definition.DECODE,
            config__target_name=target,
            config__protocol=protocol,
        )
        .select_related("config", "hardware", "baseline_entry", "baseline_run")
        .order_by("-tokens_per_second", "id")
    )
    fastest: dict[int, LeaderboardEntry] = {}
    best_speedup: dict[int, LeaderboardEntry] = {}
    for entry in entries:
        fastest.setdefault(entry.hardware_id, entry)
        if entry.speedup is not None and entry.config.spec_label != "none":
            held = best_speedup.get(entry.hardware_id)
            if held is None or entry.speedup > held.speedup:
                best_speedup[entry.hardware_id] = entry
    rows = []
    for hardware_id, top in fastest.items():
        spec = best_speedup.get(hardware_id)
        interval = entry_speedup_interval(spec) if spec else None
        across = is_across_depths(top.config)
        rows.append(
            {
                "slug": top.hardware.slug,
                "gpu_name": top.hardware.gpu_name,
                "tokens_per_second": top.tokens_per_second,
                # A depth row's pooled interval mixes input lengths: not one measurement.
                "ci95_low": None if across else top.ci95_low,
                "ci95_high": None if across else top.ci95_high,
                "n": top.n,
                "fastest_key": top.config.key,
                "fastest_label": top.config.label,
                "speedup": spec.speedup if spec else None,
                "speedup_ci95_low": interval[0] if interval else None,
                "speedup_ci95_high": interval[1] if interval else None,
                "speedup_key": spec.config.key if spec else None,
                "speedup_label": spec.config.label if spec else None,
            }
        )
    return {
        "target": target,
        "protocol": protocol,
        "rows": rows,
        "speedups": sum(1 for row in rows if row["speedup"] is not None),
    }


def hardware_comparison_for(*, target: str = "", protocol: str = "") -> dict:
    """The /hardware/ comparison for the chosen target and protocol (unknown or empty choices
    fall back to the target on the most hardware kinds and its widest protocol)."""
    targets = comparison_targets()
    if target not in targets:
        target = targets[0] if targets else ""
    protocols = comparison_protocols(target=target) if target else []
    if protocol not in protocols:
        protocol = protocols[0] if protocols else ""
    comparison = (
        hardware_comparison(target=target, protocol=protocol)
        if target and protocol
        else {"target": "", "protocol": "", "rows": [], "speedups": 0}
    )
    return comparison | {"targets": targets, "protocols": protocols}
