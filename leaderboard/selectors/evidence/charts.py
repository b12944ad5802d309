"""Chart data: the plain lists that the templates embed with `json_script` for charts.js.

It owns each chart's series: tok/s per run of one config (`config_chart_data`), the share of
verify steps each draft position was accepted (`acceptance_by_position`), speedup against extra
GPU memory (`memory_tradeoff`), the n_max sweep with one series per config but its n_max
(every other parameter held fixed) and ranking, each against its own paired baseline, with its
"higher acceptance yet slower" findings by the board's tie test (`nmax_sweep`; the pages' choices,
`nmax_choices` and `has_nmax_sweep`, from the rankings' summaries), and per-depth decode tok/s,
intervals and speedups of depth-sweep rows (`context_series`, grouped per target and GPU by
`context_groups`), and each speculative concurrency line's speedup per level with its interval
and the verdicts' word on it (`concurrency_speedup_lines`). Values come from leaderboard rows,
their rankings' summaries and runs' stored results; nothing here writes, and only /nmax/'s
choices are cached (with the board's row set).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Exists, OuterRef

from leaderboard import verdicts
from leaderboard.models import Config, Hardware, LeaderboardEntry, RankingSummary, Run
from leaderboard.selectors.board.rows import RANKED
from leaderboard.selectors.evidence.definitions import TPS_DEFINITIONS, depth_points, row_evidence
from leaderboard.stored_results import StoredResult, StoredSection, stored_results
from leaderboard.verdicts.workloads import DEPTH_PROTOCOLS, is_across_depths
from leaderboard.verdicts.workloads import depths as protocol_depths


def config_chart_data(*, runs: list[Run], first: int = 1) -> dict:
    """Plain lists for the tok/s-per-run chart: one point per run with its 95% interval, from
    the runs' stored figures (never their requests); `first` is the first run's number (the
    page of runs shown starts there)."""
    return {
        "labels": [f"run {first + i} · {r.hardware.gpu_name}" for i, r in enumerate(runs)],
        "definition": runs[0].tps_definition if runs else "decode",
        "mean": [r.tokens_per_second for r in runs],
        "ci95_low": [r.ci95[0] for r in runs],
        "ci95_high": [r.ci95[1] for r in runs],
        "acceptance": [r.acceptance_rate for r in runs],
    }


def acceptance_by_position(*, run: Run | None) -> list[float]:
    """Share of verify steps in which each draft position was accepted, from the run's result."""
    if run is None:
        return []
    # A runner result's summary says it (none where no step was verified); only a result
    # without one is counted from its records.
    pooled = StoredResult.of(run.raw_result).acceptance_by_position
    if pooled is not None:
        return pooled
    # Two columns, not whole records: a run can have tens of thousands of them.
    return _pooled_acceptance(run.requests.values_list("verify_steps", "accepted_per_position"))


def _pooled_acceptance(records: Iterable[tuple[int, object]]) -> list[float]:
    """Share of all the verify steps in which each draft position was accepted, from each
    request's verify steps and per-position accepted counts."""
    found = [
        (steps, positions if isinstance(positions, list) else []) for steps, positions in records
    ]
    steps = sum(steps for steps, _ in found)
    width = max((len(positions) for _, positions in found), default=0)
    if not steps or not width:
        return []
    return [
        sum(positions[i] for _, positions in found if i < len(positions)) / steps
        for i in range(width)
    ]


def _baseline_peak_memory(entry: LeaderboardEntry, paired: StoredSection | None) -> float | None:
    """The paired baseline's peak GPU memory (never a CPU build's process memory): its row's,
    else the baseline section's summary (`paired`) measured in the same run as the row's."""
    baseline = entry.baseline_entry if entry.baseline_entry_id else None
    if baseline is not None and baseline.peak_memory_bytes and baseline.best_run_id:
        run = baseline.best_run
        if run is not None and run.memory_kind == "gpu":
            return baseline.peak_memory_bytes
    return paired.gpu_peak_memory_bytes if paired else None


def _entry_speedup(entry: LeaderboardEntry) -> float | None:
    if entry.speedup is not None:
        return entry.speedup
    run = entry.best_run if entry.best_run_id else None
    return run.speedup if run is not None else None


def memory_tradeoff(*, target_name: str, hardware: Hardware) -> list[dict]:
    """Speculative rows of one target and hardware: speedup against extra GPU memory (GiB).
    Only GPU memory (NVML) counts: a CPU build's process memory is another measurement."""
    entries = LeaderboardEntry.objects.filter(
        target_name=target_name,
        hardware=hardware,
        retired=False,
        best_run__memory_kind="gpu",
    ).exclude(config__spec_label="none")
    points = []
    related = ("config", "baseline_entry", "baseline_entry__best_run", "best_run")
    # The runs' stored results are read on their own, for the paired baseline sections.
    rows = list(
        entries.select_related(*related).defer(
            "best_run__raw_result", "baseline_entry__best_run__raw_result"
        )
    )
    stored = stored_results(entry.best_run_id for entry in rows)
    for entry in rows:
        baseline = stored[entry.best_run_id].baseline if entry.best_run_id in stored else None
        baseline_peak = _baseline_peak_memory(entry, baseline)
        speedup = _entry_speedup(entry)
        if entry.peak_memory_bytes is None or baseline_peak is None or speedup is None:
            continue
        points.append(
            {
                "key": entry.config.key,
                "label": f"{entry.config.label} ({entry.engine_release})",
                "extra_gib": (entry.peak_memory_bytes - baseline_peak) / 2**30,
                "speedup": speedup,
            }
        )
    return sorted(points, key=lambda point: point["extra_gib"])


def _series_label(config: Config) -> str:
    """A curve's name: its type, draft file and the options it holds fixed (`verdicts.series`)."""
    return verdicts.series_label(config)


def nmax_choices() -> dict:
    """What /nmax/ offers, kept with the board's row set: {"first": the (target, hardware slug)
    of the widest sweep (most competing n_max values in one ranking), None without any;
    "targets": every target with a sweep, sorted; "hardware": every (slug, "GPU name (slug)")
    with one, sorted}. Three index reads of the rankings' summaries, whatever the board's size."""
    sweeps = RankingSummary.objects.filter(sweep__gt=0)
    first = (
        sweeps.order_by("-sweep", "target_name", "hardware__slug")
        .values_list("target_name", "hardware__slug")
        .first()
    )
    targets = sweeps.order_by("target_name").values_list("target_name", flat=True).distinct()
    hardware = (
        Hardware.objects.filter(Exists(sweeps.filter(hardware=OuterRef("pk"))))
        .order_by("slug")
        .values_list("slug", "gpu_name")
    )
    return {
        "first": tuple(first) if first else None,
        "targets": list(targets),
        "hardware": [(slug, f"{name} ({slug})") for slug, name in hardware],
    }


def has_nmax_sweep(*, target_name: str, hardware_slug: str) -> bool:
    """Whether a target has competing n_max rows on a hardware kind (one index read)."""
    return RankingSummary.objects.filter(
        target_name=target_name, hardware__slug=hardware_slug, sweep__gt=0
    ).exists()


def _nmax_baseline(points: list[LeaderboardEntry]) -> dict | None:
    """The paired baseline row of a series' points when they share one, else None."""
    baselines = {e.baseline_entry_id for e in points}
    if len(baselines) != 1 or None in baselines:
        return None
    baseline = points[0].baseline_entry
    if baseline is None:
        return None  # never: the points share a baseline row
    return {
        "key": baseline.config.key,
        "tokens_per_second": baseline.tokens_per_second,
        "ci95_low": baseline.ci95_low,
        "ci95_high": baseline.ci95_high,
        "definition": baseline.tps_definition,
    }


def _nmax_row(e: LeaderboardEntry, *, best: LeaderboardEntry | None) -> dict:
    """One n_max point of a series, as the n_max page's table shows it."""
    baseline = e.baseline_entry if e.baseline_entry_id else None
    return {
        "n_max": e.config.n_max,
        "tokens_per_second": e.tokens_per_second,
        # The figure's own interval, as every page shows it (`verdicts.uncertainty`).
        "ci95_low": e.ci95_low,
        "ci95_high": e.ci95_high,
        "interval_basis": "requests" if e.ci95_low is not None else "",
        "n": e.n,
        "acceptance": e.acceptance_rate,
        "tau": e.tau,
        "speedup": e.speedup,
        "baseline_tokens_per_second": baseline.tokens_per_second if baseline else None,
        "key": e.config.key,
        "flags": _flags(e)
        + (["noisy"] if e.noisy else [])
        + (["anecdotal"] if e.anecdotal else [])
        + _prompt_flags(e),
        "evidence_note": e.evidence_note,
        "best": e is best,
        "tied_with_best": best is not None and e is not best and verdicts.tied(e, best),
    }


def _nmax_finding(
    label: str, points: list[LeaderboardEntry], *, best: LeaderboardEntry | None
) -> dict:
    """A series' "higher acceptance, yet slower" finding: the n_max values whose acceptance is
    above the best one's that it clearly beats (Welch's test on the two configs' samples)."""
    first = points[0]
    slower = [
        {"n_max": e.config.n_max, "acceptance": e.acceptance_rate, "tps": e.tokens_per_second}
        for e in points
        if best is not None
        and e is not best
        and best.acceptance_rate is not None
        and e.acceptance_rate is not None
        and e.acceptance_rate > best.acceptance_rate
        and verdicts.clearly_faster(best, e)
    ]
    return {
        "type": label,
        "protocol": first.workload_label,
        "definition": first.tps_definition,
        "fast_n_max": best.config.n_max if best else None,
        "fast_acceptance": best.acceptance_rate if best else None,
        "fast_tps": best.tokens_per_second if best else None,
        "slower": slower,
    }


def _nmax_series(label: str, points: list[LeaderboardEntry]) -> tuple[dict, dict]:
    """One series of the n_max page and its "higher acceptance, yet slower" finding."""
    first = points[0]
    best = verdicts.best_n_max(points)
    series = {
        "label": label,
        "protocol": first.workload_label,
        "ranking": first.ranking_label,
        "definition": first.tps_definition,
        "definition_text": TPS_DEFINITIONS.get(first.tps_definition, first.tps_definition),
        "n_max": [e.config.n_max for e in points],
        "tokens_per_second": [e.tokens_per_second for e in points],
        "ci95_low": [e.ci95_low for e in points],
        "ci95_high": [e.ci95_high for e in points],
        "tau": [e.tau for e in points],
        "acceptance": [e.acceptance_rate for e in points],
        "keys": [e.config.key for e in points],
        "flags": [_flags(e) for e in points],
        "best_n_max": best.config.n_max if best else None,
        # A depth run's one figure pools its depths; the table says so beside its interval.
        "depths": len(protocol_depths(first.config)) if is_across_depths(first.config) else 0,
        "baseline": _nmax_baseline(points),
        "rows": [_nmax_row(e, best=best) for e in points],
    }
    return series, _nmax_finding(label, points, best=best)


def nmax_sweep(*, target_name: str, hardware_slug: str) -> dict:
    """tok/s, tau and acceptance against n_max, one series per config but its n_max and ranking.

    A series is one config: its points differ in n_max alone (`verdicts.held_fixed`: the draft
    file, threads, engine options and flags are the same), named by what it holds fixed
    (`verdicts.series_label`: "draft-simple · draft tiny · -t 1"). It never mixes rankings
    (`verdicts.workloads`: workload, tok/s definition, GPU and release); each (series, n_max) keeps
    its fastest competing row; each row names its own paired baseline, and a series draws a
    baseline only when all its points share that one. The best n_max is
    `verdicts.advice.best_n_max` (never a degenerate or noisy point); `findings` names, per series,
    the n_max values with a higher acceptance rate than the best one that it clearly beats (Welch's
    test on the configs' samples).
    """
    entries = (
        LeaderboardEntry.objects.filter(
            RANKED,
            rank__isnull=False,
            target_name=target_name,
            hardware__slug=hardware_slug,
            config__n_max__isnull=False,
        )
        .select_related("config", "config__draft", "baseline_entry", "baseline_entry__config")
        .order_by("config__n_max", "-tokens_per_second", "id")
    )
    series: dict[tuple[str, str], dict[int, LeaderboardEntry]] = {}
    labels: dict[tuple[str, str], str] = {}
    names: dict[tuple[str, str], str] = {}
    for entry in entries:
        # One curve is one config but for its n_max: every other parameter held fixed.
        slot = (verdicts.held_fixed(entry.config), entry.ranking_key)
        labels[slot] = entry.ranking_label
        names[slot] = _series_label(entry.config)
        by_n_max = series.setdefault(slot, {})
        # The fastest clean row of an n_max stands for it.
        n_max = entry.config.n_max
        if n_max is None:
            continue  # never: the query keeps the rows with an n_max
        held = by_n_max.get(n_max)
        if held is None or (held.noisy and not entry.noisy):
            by_n_max[n_max] = entry
    types, findings = [], []
    for slot in sorted(series, key=lambda s: (names[s], labels[s], s[0])):
        by_n_max = series[slot]
        one, finding = _nmax_series(names[slot], [by_n_max[n] for n in sorted(by_n_max)])
        types.append(one)
        if finding["slower"]:
            findings.append(finding)
    return {
        "types": types,
        "definitions": sorted({t["definition"] for t in types}),
        "findings": findings,
    }


def _prompt_flags(entry: LeaderboardEntry) -> list[str]:
    """An n-gram row's prompts, where they make its figure an upper bound (`_prompt_badges`)."""
    if entry.memorised:
        return ["repeated prompt"]
    return ["prompts unknown"] if entry.prompts_unknown else []


def _flags(entry: LeaderboardEntry | Run) -> list[str]:
    names = ("synthetic", "test_weights", "self_reported", "degenerate", "retired")
    return [name.replace("_", "-") for name in names if getattr(entry, name, False)]


def _depth_points(run: Run) -> list[dict]:
    return depth_points(StoredResult.of(run.raw_result).stored_points)


def context_series(*, target_name: str = "", hardware_slug: str = "") -> list[dict]:
    """Speedup against context depth, one line per config and hardware, from depth-sweep rows.

    Each line is the config's fastest current row on that hardware: per depth its decode mean,
    n, 95% interval and speedup over the paired baseline at the same depth (the baseline of the
    same runner invocation, else the row's baseline batch), and across depths their geometric
    mean, as the runner combines them.
    """
    entries = (
        LeaderboardEntry.objects.filter(
            config__protocol__in=DEPTH_PROTOCOLS, retired=False, best_run__isnull=False
        )
        .exclude(config__spec_label="none")
        .select_related("config", "config__draft", "hardware", "baseline_entry")
        .order_by("-tokens_per_second", "id")
    )
    if target_name:
        entries = entries.filter(target_name=target_name)
    if hardware_slug:
        entries = entries.filter(hardware__slug=hardware_slug)
    best: dict[tuple[int, int], LeaderboardEntry] = {}
    for entry in entries:
        best.setdefault((entry.config_id, entry.hardware_id), entry)
    evidence = row_evidence(entries=list(best.values()))
    lines = [
        _context_line(entry, evidence[entry.pk])
        for entry in best.values()
        if len(evidence[entry.pk]["depths"]) >= 2
    ]
    return sorted(lines, key=lambda line: line["label"])


def _short_label(entry: LeaderboardEntry) -> str:
    """A line's short name: target, series, n_max and GPU, those it has."""
    config = entry.config
    n_max = f"n_max {config.n_max}" if config.n_max else ""
    parts = (config.target_name, _series_label(config), n_max, entry.hardware.gpu_name)
    return " · ".join(part for part in parts if part)


def _context_line(entry: LeaderboardEntry, evidence: dict) -> dict:
    """A config's line on one hardware kind: its figures and speedup at each depth, and across
    them (`selectors.evidence.definitions.row_evidence`)."""
    depths = evidence["depths"]
    config = entry.config
    return {
        "key": config.key,
        "run_id": entry.best_run_id,
        "label": f"{config.label} · {entry.hardware.gpu_name}",
        "target_name": config.target_name,
        "gpu_name": entry.hardware.gpu_name,
        "hardware_slug": entry.hardware.slug,
        "short_label": _short_label(entry),
        "flags": _flags(entry),
        "engine_release": entry.engine_release,
        "depths": [d["input_tokens"] for d in depths],
        "speedup": [d["speedup"] for d in depths],
        "speedup_ci95_low": [d["speedup_ci95_low"] for d in depths],
        "speedup_ci95_high": [d["speedup_ci95_high"] for d in depths],
        "verdicts": [d["speedup_verdict"] for d in depths],
        "tokens_per_second": [d["mean"] for d in depths],
        "ci95_low": [d["ci95_low"] for d in depths],
        "ci95_high": [d["ci95_high"] for d in depths],
        "n": [d["n"] for d in depths],
        "acceptance": [d["acceptance"] for d in depths],
        "speedup_across_depths": evidence["speedup_across_depths"],
    }


def context_groups(lines: list[dict]) -> list[dict]:
    """The context lines' (target, GPU) pairs, each with the indexes of its lines: one chart per
    target and GPU, so no chart sets one GPU's speedups beside another's."""
    groups: dict[tuple[str, str], dict] = {}
    for index, line in enumerate(lines):
        found = groups.setdefault(
            (line["target_name"], line["hardware_slug"]),
            {"target_name": line["target_name"], "gpu_name": line["gpu_name"], "lines": []},
        )
        found["lines"].append(index)
    return sorted(groups.values(), key=lambda g: (g["target_name"], g["gpu_name"]))


def concurrency_speedup_lines(*, lines: list[dict]) -> list[dict]:
    """Each speculative concurrency line's speedup over its paired baseline at each level that
    has one, with the ratio's 95% interval and the level's verdict (`verdicts.level_verdicts`:
    "faster", "slower" or "not established"), which the chart's colours show."""
    found = []
    for line in lines:
        if line["baseline"]:
            continue
        rows = [row for row in line["rows"] if row["speedup"] is not None]
        if not rows:
            continue
        found.append(
            {
                "label": line["short_label"],
                "key": line["key"],
                "levels": [row["concurrency"] for row in rows],
                "speedup": [row["speedup"] for row in rows],
                "ci95_low": [row["speedup_ci95_low"] for row in rows],
                "ci95_high": [row["speedup_ci95_high"] for row in rows],
                "verdicts": [row["verdict"] for row in rows],
            }
        )
    return found
