"""The front page's speedup chart and the /hardware/ page's comparison of GPUs for a target.

It owns `speedup_chart` (speculative configs of one target in one ranking, by speedup over their
paired baselines, with each speedup's 95% interval as the verdicts stored it and the verdicts'
word on it against no drafting, which the bar's colour shows) and
`hardware_comparison` (per hardware kind, for one target and workload: the fastest row with its
config's interval and the best speedup with its interval).

Only competing rows are drawn (`verdicts.ranking.competes`), and a chart never mixes rankings
(`verdicts.workloads`: one workload, tok/s definition, GPU and release). The front chart is
chosen as the front page's first answer is, so that neither follows what was submitted last:
the first GPU and target in the answers' order (GPU name, then target) unless chosen, and of its
rankings the first workload that answer names (`verdicts.answer_workloads`: the first by its
label where a draft is faster than none, else the least slow); it names that workload and says
how many rows of others it left out. The GPU comparison is one workload in decode tok/s, a GPU's
figures each from its own ranking.
"""

from __future__ import annotations

from django.db.models import Count, QuerySet

from leaderboard import verdicts
from leaderboard.models import LeaderboardEntry, Run
from leaderboard.selectors.board.rows import RANKED, competing_drafts
from leaderboard.verdicts.workloads import is_across_depths

# The front chart's bars: the fastest configs by speedup (the table below has every row).
SPEEDUP_CHART_LIMIT = 20


def _speculative_rows(**filters: str) -> QuerySet[LeaderboardEntry]:
    return competing_drafts(**filters).select_related("config", "config__draft", "hardware")


def _filtered(*, spec_type: str, protocol: str) -> dict[str, str]:
    filters = {}
    if spec_type:
        filters["config__spec_types__name"] = spec_type
    if protocol:
        filters["config__protocol"] = protocol
    return filters


def _chart_pair(*, target: str, hardware: str, filters: dict[str, str]) -> tuple[str, str] | None:
    """The selected target and hardware, the unselected one(s) filled in with the first pair
    with competing speedups in the front page's answers' order (GPU name, slug, target)."""
    rows = _speculative_rows(**filters)
    if target:
        rows = rows.filter(target_name=target)
    if hardware:
        rows = rows.filter(hardware__slug=hardware)
    first = (
        rows.order_by("hardware__gpu_name", "hardware__slug", "target_name")
        .values_list("target_name", "hardware__slug")
        .first()
    )
    return tuple(first) if first else None  # type: ignore[return-value]


def _config_label(entry: LeaderboardEntry) -> str:
    """A bar's name: its type, draft file and every option it sets (`verdicts.series`), then its
    n_max, so that two configs that differ in anything never share one."""
    config = entry.config
    label = verdicts.series_label(config)
    return f"{label} · n_max {config.n_max}" if config.n_max else label


def speedup_chart(
    *, target: str = "", hardware: str = "", spec_type: str = "", protocol: str = ""
) -> dict | None:
    """The front chart: speculative configs of one target in one ranking of one hardware kind,
    fastest speedup first, with 95% intervals; None when no ranked row has a speedup."""
    filters = _filtered(spec_type=spec_type, protocol=protocol)
    pair = _chart_pair(target=target, hardware=hardware, filters=filters)
    if pair is None:
        return None
    target_name, slug = pair
    rows = list(
        _speculative_rows(target_name=target_name, hardware__slug=slug, **filters)
        .distinct()
        .order_by("-speedup", "id")
    )
    by_ranking: dict[str, list[LeaderboardEntry]] = {}
    for entry in rows:
        by_ranking.setdefault(entry.ranking_key, []).append(entry)
    kept = by_ranking[_leading_ranking(by_ranking)]
    shown = kept[:SPEEDUP_CHART_LIMIT]
    return {
        "target": target_name,
        "hardware": slug,
        "gpu_name": shown[0].hardware.gpu_name,
        "definition": shown[0].tps_definition,
        "workload": shown[0].workload_label,
        "ranking_label": shown[0].ranking_label,
        "chosen": {"target": bool(target), "hardware": bool(hardware)},
        "other_ranking_rows": len(rows) - len(kept),
        "other_rankings": len(by_ranking) - 1,
        "more_rows": len(kept) - len(shown),
        "points": [_speedup_bar(entry) for entry in shown],
        # Every ranking it read, for the page cache (`leaderboard.web.page_cache.shows`).
        "rankings": sorted(by_ranking),
    }


def _leading_ranking(by_ranking: dict[str, list[LeaderboardEntry]]) -> str:
    """The first workload the front page's answer for a target and GPU kind names."""
    [lead], _ = verdicts.answer_workloads(
        [
            verdicts.WorkloadLead(
                ranking_key=key,
                ranking_label=found[0].ranking_label,
                speedup=verdicts.leading_speedup(found),
            )
            for key, found in by_ranking.items()
        ],
        limit=1,
    )
    return lead.ranking_key


def _speedup_bar(entry: LeaderboardEntry) -> dict:
    """One config's bar: its speedup with its interval and the verdicts' word on it."""
    interval = verdicts.speedup_interval(entry)
    return {
        "key": entry.config.key,
        "label": _config_label(entry),
        "speedup": entry.speedup,
        # The verdicts' word on it against no drafting (faster, slower, unclear, ...): what the
        # bar's colour says. An anecdotal speedup has no word: its bar is not coloured.
        # (A competing row has a speedup: `competing_drafts`.)
        "verdict": None
        if entry.anecdotal or entry.speedup is None
        else verdicts.against_baseline(interval, entry.speedup),
        "anecdotal": entry.anecdotal,
        "ci95_low": interval[0] if interval else None,
        "ci95_high": interval[1] if interval else None,
        "interval_basis": entry.speedup_basis,
        "tokens_per_second": entry.tokens_per_second,
        "n": entry.n,
        "engine_release": entry.engine_release,
        "across_depths": is_across_depths(entry.config),
        "noisy": entry.noisy,
        "baseline_noisy": entry.baseline_noisy,
        "memorised": entry.memorised,
        "prompts_unknown": entry.prompts_unknown,
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


def comparison_protocols(*, target: str) -> list[tuple[str, str]]:
    """A target's workloads with ranked decode rows, as (Config.workload, its words), the one on
    the most hardware kinds first."""
    rows = (
        LeaderboardEntry.objects.filter(
            RANKED, tps_definition=Run.Definition.DECODE, target_name=target
        )
        .values("config__protocol", "config__protocol_variant", "workload_label")
        .annotate(kinds=Count("hardware", distinct=True))
        .order_by("-kinds", "config__protocol", "config__protocol_variant")
    )
    seen: dict[str, str] = {}
    for row in rows:
        key = f"{row['config__protocol']}:{row['config__protocol_variant']}"
        seen.setdefault(key, row["workload_label"] or row["config__protocol"])
    return list(seen.items())


def hardware_comparison(*, target: str, protocol: str) -> dict:
    """Per hardware kind, for one target and workload (`Config.workload`, decode tok/s): the
    fastest row with its config's 95% interval and the best speedup with its interval, fastest
    hardware first. A GPU's two figures come from its own ranking (its newest release first)."""
    name, _, variant = protocol.partition(":")
    entries = (
        LeaderboardEntry.objects.filter(
            RANKED,
            tps_definition=Run.Definition.DECODE,
            target_name=target,
            config__protocol=name,
            config__protocol_variant=variant,
        )
        .select_related("config", "hardware")
        .order_by("-tokens_per_second", "id")
    )
    fastest: dict[int, LeaderboardEntry] = {}
    best_speedup: dict[int, LeaderboardEntry] = {}
    for entry in entries:
        fastest.setdefault(entry.hardware_id, entry)
        if entry.speedup is not None and entry.rank is not None and verdicts.crownable(entry):
            held = best_speedup.get(entry.hardware_id)
            if held is None or held.speedup is None or entry.speedup > held.speedup:
                best_speedup[entry.hardware_id] = entry
    rows = [
        _fastest_figures(top) | _speedup_figures(best_speedup.get(hardware_id))
        for hardware_id, top in fastest.items()
    ]
    workloads = dict(comparison_protocols(target=target))
    return {
        "target": target,
        "protocol": protocol,
        "workload": workloads.get(protocol, protocol),
        "rows": rows,
        "speedups": sum(1 for row in rows if row["speedup"] is not None),
    }


def _fastest_figures(top: LeaderboardEntry) -> dict:
    """A hardware kind's fastest row: its tok/s with the interval every page shows beside it."""
    return {
        "slug": top.hardware.slug,
        "gpu_name": top.hardware.gpu_name,
        "tokens_per_second": top.tokens_per_second,
        # The figure's own interval, as every page shows it (`verdicts.uncertainty`).
        "ci95_low": top.ci95_low,
        "ci95_high": top.ci95_high,
        "interval_basis": "requests" if top.ci95_low is not None else "",
        "n": top.n,
        "fastest_key": top.config.key,
        "fastest_label": top.config.label,
    }


def _speedup_figures(spec: LeaderboardEntry | None) -> dict:
    """A hardware kind's best speedup with its interval and the verdicts' word on it."""
    if spec is None or spec.speedup is None:  # (a kind's best speedup row has one)
        return {
            "speedup": None,
            "speedup_ci95_low": None,
            "speedup_ci95_high": None,
            "speedup_basis": "",
            "speedup_verdict": None,
            "speedup_key": None,
            "speedup_label": None,
        }
    interval = verdicts.speedup_interval(spec)
    return {
        "speedup": spec.speedup,
        "speedup_ci95_low": interval[0] if interval else None,
        "speedup_ci95_high": interval[1] if interval else None,
        "speedup_basis": spec.speedup_basis,
        "speedup_verdict": verdicts.against_baseline(interval, spec.speedup),
        "speedup_key": spec.config.key,
        "speedup_label": spec.config.label,
    }


def hardware_comparison_for(*, target: str = "", protocol: str = "") -> dict:
    """The /hardware/ comparison for the chosen target and workload (unknown or empty choices
    fall back to the target on the most hardware kinds and its widest workload)."""
    targets = comparison_targets()
    if target not in targets:
        target = targets[0] if targets else ""
    choices = comparison_protocols(target=target) if target else []
    keys = [key for key, _ in choices]
    if protocol not in keys:
        # A bare protocol name picks its widest workload.
        protocol = next(
            (k for k in keys if k.partition(":")[0] == protocol), keys[0] if keys else ""
        )
    comparison = (
        hardware_comparison(target=target, protocol=protocol)
        if target and protocol
        else {"target": "", "protocol": "", "workload": "", "rows": [], "speedups": 0}
    )
    return comparison | {"targets": targets, "protocols": keys, "workloads": choices}
