"""Chart data: the plain lists that the templates embed with `json_script` for charts.js.

It owns each chart's series: tok/s per run of one config (`config_chart_data`), the share of
verify steps each draft position was accepted (`acceptance_by_position`), speedup against extra
GPU memory (`memory_tradeoff`), the n_max sweep per speculative type with its "higher acceptance
yet slower" findings (`nmax_targets`, `nmax_sweep`), and speedup against context depth from
depth-sweep runs (`context_series`). Values come from leaderboard rows and runs' stored results;
nothing here writes or caches.
"""

from __future__ import annotations

from django.db.models import Count

from leaderboard.models import Config, EngineBuild, Hardware, LeaderboardEntry, Run


def config_chart_data(*, runs: list[Run]) -> dict:
    """Plain lists for the tok/s-per-run chart: one point per run with its 95% interval."""
    return {
        "labels": [f"run {i + 1} · {r.hardware.gpu_name}" for i, r in enumerate(runs)],
        "definition": runs[0].tps_definition if runs else "decode",
        "mean": [r.tokens_per_second for r in runs],
        "ci95_low": [r.ci95[0] for r in runs],
        "ci95_high": [r.ci95[1] for r in runs],
        "acceptance": [r.acceptance_rate for r in runs],
        "requests": [
            [(q.decode_tokens_per_second, q.end_to_end_tokens_per_second) for q in r.requests.all()]
            for r in runs
        ],
    }


def acceptance_by_position(*, run: Run | None) -> list[float]:
    """Share of verify steps in which each draft position was accepted, from the run's result."""
    if run is None:
        return []
    pooled = (run.raw_result.get("summary") or {}).get("acceptance_by_position")
    if pooled:
        return [float(value) for value in pooled]
    records = list(run.requests.all())
    steps = sum(r.verify_steps for r in records)
    width = max((len(r.accepted_per_position or []) for r in records), default=0)
    if not steps or not width:
        return []
    return [
        sum((r.accepted_per_position or [])[i] for r in records if i < len(r.accepted_per_position))
        / steps
        for i in range(width)
    ]


def _baseline_peak_memory(entry: LeaderboardEntry) -> int | None:
    if entry.baseline_entry_id and entry.baseline_entry.peak_memory_bytes:
        return entry.baseline_entry.peak_memory_bytes
    run = entry.best_run
    paired = (run.raw_result.get("baseline") or {}) if run else {}
    return (paired.get("summary") or {}).get("peak_memory_bytes")


def _entry_speedup(entry: LeaderboardEntry) -> float | None:
    if entry.speedup is not None:
        return entry.speedup
    return entry.best_run.speedup if entry.best_run_id else None


def memory_tradeoff(*, target_name: str, hardware: Hardware) -> list[dict]:
    """Speculative rows of one target and hardware: speedup against extra GPU memory (GiB)."""
    entries = LeaderboardEntry.objects.filter(
        config__target_name=target_name, hardware=hardware, retired=False
    ).exclude(config__spec_label="none")
    points = []
    for entry in entries.select_related("config", "baseline_entry", "best_run"):
        baseline_peak = _baseline_peak_memory(entry)
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


def _spec_series_label(config: Config) -> str:
    return config.spec_label.replace(",", " + ")


def nmax_targets() -> list[tuple[str, str, str]]:
    """(target, hardware slug, GPU name) pairs with n_max rows, the widest sweep first."""
    rows = (
        LeaderboardEntry.objects.filter(retired=False, config__n_max__isnull=False)
        .values("config__target_name", "hardware__slug", "hardware__gpu_name")
        .annotate(points=Count("config__n_max", distinct=True))
        .order_by("-points", "config__target_name", "hardware__slug")
    )
    return [(r["config__target_name"], r["hardware__slug"], r["hardware__gpu_name"]) for r in rows]


def nmax_sweep(*, target_name: str, hardware_slug: str) -> dict:
    """Decode tok/s, tau and acceptance against n_max for each speculative type on one hardware.

    Each (type, n_max) keeps its fastest row; the fastest n_max of each type is marked best, and
    `findings` names, per type, the n_max values that had a higher acceptance rate than the best
    one and were clearly slower (the best mean lies above their 95% interval).
    """
    entries = (
        LeaderboardEntry.objects.filter(
            config__target_name=target_name,
            hardware__slug=hardware_slug,
            retired=False,
            config__n_max__isnull=False,
        )
        .select_related("config")
        .order_by("config__n_max", "-tokens_per_second")
    )
    series: dict[str, dict[int, LeaderboardEntry]] = {}
    for entry in entries:
        by_n_max = series.setdefault(_spec_series_label(entry.config), {})
        by_n_max.setdefault(entry.config.n_max, entry)
    types = []
    findings = []
    for label, by_n_max in sorted(series.items()):
        points = [by_n_max[n] for n in sorted(by_n_max)]
        best = max(points, key=lambda e: e.tokens_per_second)
        types.append(
            {
                "label": label,
                "n_max": [e.config.n_max for e in points],
                "tokens_per_second": [e.tokens_per_second for e in points],
                "ci95_low": [e.ci95_low for e in points],
                "ci95_high": [e.ci95_high for e in points],
                "tau": [e.tau for e in points],
                "acceptance": [e.acceptance_rate for e in points],
                "keys": [e.config.key for e in points],
                "flags": [_flags(e) for e in points],
                "best_n_max": best.config.n_max,
                "rows": [
                    {
                        "n_max": e.config.n_max,
                        "tokens_per_second": e.tokens_per_second,
                        "ci95_low": e.ci95_low,
                        "ci95_high": e.ci95_high,
                        "acceptance": e.acceptance_rate,
                        "tau": e.tau,
                        "key": e.config.key,
                        "flags": _flags(e),
                        "best": e is best,
                    }
                    for e in points
                ],
            }
        )
        slower = [
            {"n_max": e.config.n_max, "acceptance": e.acceptance_rate, "tps": e.tokens_per_second}
            for e in points
            if e is not best
            and best.acceptance_rate is not None
            and e.acceptance_rate is not None
            and e.acceptance_rate > best.acceptance_rate
            # Only where the difference is not noise: the best mean lies above e's interval.
            and e.ci95_high is not None
            and best.tokens_per_second > e.ci95_high
        ]
        if slower:
            findings.append(
                {
                    "type": label,
                    "fast_n_max": best.config.n_max,
                    "fast_acceptance": best.acceptance_rate,
                    "fast_tps": best.tokens_per_second,
                    "slower": slower,
                }
            )
    baseline = (
        LeaderboardEntry.objects.filter(
            config__target_name=target_name,
            hardware__slug=hardware_slug,
            retired=False,
            config__spec_label="none",
        )
        .order_by("-tokens_per_second")
        .first()
    )
    return {
        "types": types,
        "baseline_tokens_per_second": baseline.tokens_per_second if baseline else None,
        "findings": findings,
    }


def _flags(entry: LeaderboardEntry | Run) -> list[str]:
    names = ("synthetic", "self_reported", "degenerate", "retired")
    return [name.replace("_", "-") for name in names if getattr(entry, name, False)]


def _depth_points(run: Run) -> list[dict]:
    return [
        point
        for point in (run.raw_result.get("points") or [])
        if point.get("input_tokens") is not None
    ]


def context_series(*, target_name: str = "", hardware_slug: str = "") -> list[dict]:
    """Speedup against context depth, one line per config and hardware, from depth-sweep runs.

    A point's speedup is the runner's own pairing when the run measured its baseline; otherwise
    it is paired with the baseline config's run at the same depth, hardware and release.
    """
    runs = Run.objects.filter(config__protocol__in=("depth", "context-sweep")).select_related(
        "config", "hardware"
    )
    if target_name:
        runs = runs.filter(config__target_name=target_name)
    if hardware_slug:
        runs = runs.filter(hardware__slug=hardware_slug)
    retired = set(EngineBuild.objects.filter(retired=True).values_list("release", flat=True))
    best: dict[tuple[int, int], Run] = {}
    for run in runs.exclude(config__spec_label="none").exclude(engine_release__in=retired):
        if len(_depth_points(run)) < 2:
            continue
        slot = (run.config_id, run.hardware_id)
        if slot not in best or (run.tokens_per_second or 0) > (best[slot].tokens_per_second or 0):
            best[slot] = run
    lines = []
    for run in best.values():
        points = _depth_points(run)
        baseline_means = _baseline_depth_means(run)
        speedups = []
        for point in points:
            mean = (point.get("decode_tokens_per_second") or {}).get("mean")
            speedup = point.get("speedup")
            if speedup is None and mean and baseline_means.get(point["input_tokens"]):
                speedup = mean / baseline_means[point["input_tokens"]]
            speedups.append(speedup)
        lines.append(
            {
                "key": run.config.key,
                "run_id": run.pk,
                "label": f"{run.config.label} · {run.hardware.gpu_name}",
                "short_label": " · ".join(
                    part
                    for part in (
                        run.config.target_name,
                        _spec_series_label(run.config),
                        f"n_max {run.config.n_max}" if run.config.n_max else "",
                        run.hardware.gpu_name,
                    )
                    if part
                ),
                "flags": _flags(run),
                "depths": [p["input_tokens"] for p in points],
                "speedup": speedups,
                "tokens_per_second": [
                    (p.get("decode_tokens_per_second") or {}).get("mean") for p in points
                ],
                "acceptance": [p.get("acceptance_rate") for p in points],
            }
        )
    return sorted(lines, key=lambda line: line["label"])


def _baseline_depth_means(run: Run) -> dict[int, float]:
    paired = run.raw_result.get("baseline") or {}
    points = paired.get("points") or []
    if not points and run.config.baseline_id:
        baseline_run = (
            Run.objects.filter(
                config_id=run.config.baseline_id,
                hardware_id=run.hardware_id,
                engine_release=run.engine_release,
            )
            .order_by("-created_at")
            .first()
        )
        points = baseline_run.raw_result.get("points") or [] if baseline_run else []
    return {
        p["input_tokens"]: (p.get("decode_tokens_per_second") or {}).get("mean")
        for p in points
        if p.get("input_tokens") is not None
    }
