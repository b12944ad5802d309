"""Reads for the concurrency and categories protocols.

It owns what the pages and the API show of those results, all read from the points and requests
of each run's stored result through its typed, lenient view (`leaderboard.stored_results`; a
stored file may lack a field or carry nulls: that shows as "–", never an error):

- concurrency: per level the aggregate tok/s over rounds (n, mean, 95% interval), per-request
  decode tok/s, time to first token, acceptance, and the speedup derived here (the aggregate mean
  over the paired baseline's at the same level, never a file's claim) with its interval and the
  level's verdict (`verdicts.concurrency`: faster, slower or not established by Welch on the
  rounds), and the crossover as a level interval with its uncertainty ("between 2 and 8");
  `concurrency_series` ranks the configs at a level the page chooses, within their ranking
  (`concurrency_view` for a config page, `concurrency_targets` and `concurrency_series` for
  /concurrency/); each level carries its latency percentiles and goodput at a TPOT objective,
  derived from the stored requests (`selectors.answers.serving`).
- the helpers both protocols' reads share (the stored results of some runs, a row's paired
  baseline points, its flags and short label); the categories protocol's own reads are in
  `selectors.evidence.categories`.
Energy and the roofline of the same results are read in `selectors.evidence.energy`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db.models import Count

from leaderboard import verdicts
from leaderboard.models import Config, LeaderboardEntry
from leaderboard.selectors.answers.serving import latency_by_level
from leaderboard.selectors.evidence.definitions import baseline_run_id
from leaderboard.stored_results import StoredResult, stored_results
from runner.stats import DEFAULT_TPOT_OBJECTIVE_MS

CONCURRENCY = "concurrency"
CATEGORIES = "categories"
# Protocols whose rows rank only among rows of the same protocol (selectors.board.ranks).
SEPARATE_PROTOCOLS = (CONCURRENCY, CATEGORIES)
# A level's drafting figures (`_acceptance_figures`), all null without request records.
DRAFTING_FIGURES = (
    "acceptance", "acceptance_ci95_low", "acceptance_ci95_high", "tau", "tau_ci95_low",
    "tau_ci95_high", "draft_tokens", "draft_accepted", "verify_steps", "drafting_rounds",
)  # fmt: skip


def _number(value: object) -> float | None:
    """A stored figure as a finite number, or None for anything else (`verdicts.finite`)."""
    return verdicts.finite(value)


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _statistics(point: dict, name: str) -> dict:
    """n, mean and the 95% interval of one of a point's Statistics (the interval only for n >=
    2)."""
    stats = _mapping(point.get(name))
    n = _number(stats.get("n"))
    interval = n is not None and n >= 2
    return {
        "n": int(n) if n is not None else None,
        "mean": _number(stats.get("mean")),
        "ci95_low": _number(stats.get("ci95_low")) if interval else None,
        "ci95_high": _number(stats.get("ci95_high")) if interval else None,
    }


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator is not None and denominator else None


def _stored(run_ids: Iterable[int | None]) -> dict[int, StoredResult]:
    """The stored results of some runs with their request records, in two queries:
    {run id: view}."""
    return stored_results(run_ids, requests=True)


def _paired_points(own: StoredResult | None, baseline: StoredResult | None) -> list[dict]:
    """The paired baseline's points: the runner's own baseline (the same invocation) where the
    result kept it, else those of the baseline batch the row's speedup is measured against."""
    if own is not None and own.baseline_points:
        return list(own.baseline_points)
    return list(baseline.points) if baseline else []


def _reference_points(entry: LeaderboardEntry, stored: dict[int, StoredResult]) -> list[dict]:
    """A row's paired baseline points (`_paired_points`), from the stored results read."""
    own = stored.get(entry.best_run_id or 0)
    return _paired_points(own, stored.get(baseline_run_id(entry) or 0))


def _flags(entry: LeaderboardEntry) -> list[str]:
    names = ("synthetic", "test_weights", "self_reported", "degenerate", "retired")
    return [name.replace("_", "-") for name in names if getattr(entry, name, False)]


def _short_label(config: Config) -> str:
    """A line's name: its type, draft file and options (`verdicts.series_label`), then its n_max;
    a baseline's, "baseline" and its options, so no two configs share one."""
    if not config.is_speculative:
        return " · ".join(["baseline", *verdicts.option_words(config.canonical)])
    label = verdicts.series_label(config)
    return f"{label} · n_max {config.n_max}" if config.n_max else label


# Concurrency


def concurrency_points(points: object) -> dict[int, dict]:
    """A result's concurrency points by level (the first point of a level wins), read defensively
    (`verdicts.level_points`)."""
    return verdicts.level_points(points)


def concurrency_rows(
    points: object, baseline_points: object = None, requests: object = None
) -> list[dict]:
    """Per level: aggregate tok/s (n rounds, mean, interval), per-request decode mean, time to
    first token, the baseline's aggregate mean, the speedup derived from both with its interval,
    the level's verdict against the baseline, and its acceptance and tau derived from the
    result's `requests` (`verdicts.level_acceptance`: pooled, with 95% intervals over the
    rounds; null without request records)."""
    reference = concurrency_points(baseline_points)
    judged = {v.level: v for v in verdicts.level_verdicts(points, baseline_points)}
    drafting = verdicts.level_acceptance(requests)
    rows = []
    for level, point in concurrency_points(points).items():
        aggregate = _statistics(point, "aggregate_tokens_per_second")
        baseline = (
            _statistics(reference[level], "aggregate_tokens_per_second")["mean"]
            if (level in reference)
            else None
        )
        verdict = judged.get(level)
        interval = verdict.speedup_interval if verdict else None
        rows.append(
            {
                "concurrency": level,
                "n": aggregate["n"],
                "aggregate": aggregate["mean"],
                "ci95_low": aggregate["ci95_low"],
                "ci95_high": aggregate["ci95_high"],
                "decode": _statistics(point, "decode_tokens_per_second")["mean"],
                "decode_n": _statistics(point, "decode_tokens_per_second")["n"],
                "ttft_ms": _statistics(point, "ttft_ms")["mean"],
                **_acceptance_figures(drafting.get(level)),
                "baseline_aggregate": baseline,
                "speedup": _ratio(aggregate["mean"], baseline),
                "speedup_ci95_low": interval[0] if interval else None,
                "speedup_ci95_high": interval[1] if interval else None,
                "verdict": verdict.verdict if verdict and baseline is not None else "",
                "p": verdict.p if verdict else None,
                # The rounds as a sample (mean, deviation, n): what a ranking at this level tests.
                "sample": verdicts.aggregate_sample(point),
            }
        )
    return rows


def _acceptance_figures(found: verdicts.LevelAcceptance | None) -> dict:
    """A level's drafting figures as a row holds them (all null without records)."""
    if found is None:
        return dict.fromkeys(DRAFTING_FIGURES)
    acceptance = found.acceptance_interval or (None, None)
    tau = found.tau_interval or (None, None)
    return {
        "acceptance": found.acceptance,
        "acceptance_ci95_low": acceptance[0],
        "acceptance_ci95_high": acceptance[1],
        "tau": found.tau,
        "tau_ci95_low": tau[0],
        "tau_ci95_high": tau[1],
        "draft_tokens": found.drafted,
        "draft_accepted": found.accepted,
        "verify_steps": found.verify_steps,
        "drafting_rounds": found.rounds,
    }


def crossover(rows: Sequence[dict]) -> int | None:
    """The point estimate of the crossover: the lowest level whose speedup is below 1, None if
    none is (the chart's marker and the API's `crossover`); its uncertainty, in words, is
    `crossover_words`."""
    return next(
        (r["concurrency"] for r in rows if r["speedup"] is not None and r["speedup"] < 1), None
    )


def crossover_words(points: object, baseline_points: object) -> str:
    """Where speculation stops paying, with its uncertainty (`verdicts.concurrency`)."""
    return verdicts.crossover_text(points, baseline_points)


def _curve(rows: list[dict]) -> dict:
    """A line's curve as the chart draws it: per level, its aggregate with its interval."""
    return {
        "levels": [r["concurrency"] for r in rows],
        "aggregate": [r["aggregate"] for r in rows],
        "ci95_low": [r["ci95_low"] for r in rows],
        "ci95_high": [r["ci95_high"] for r in rows],
    }


def _concurrency_line(
    entry: LeaderboardEntry,
    stored: dict[int, StoredResult],
    tpot_ms_objective: float = DEFAULT_TPOT_OBJECTIVE_MS,
) -> dict:
    config = entry.config
    own = stored.get(entry.best_run_id or 0) or StoredResult()
    # The verdicts read a result's points and requests as lists.
    points = list(own.points)
    reference = _reference_points(entry, stored) if config.is_speculative else []
    rows = concurrency_rows(points, reference, list(own.requests))
    # Each level's latency percentiles and goodput, from the stored requests
    # (selectors.answers.serving).
    latency = latency_by_level(own, tpot_ms_objective=tpot_ms_objective)
    for row in rows:
        row["latency"] = latency.get(row["concurrency"])
    baseline = config.baseline if config.baseline_id else None
    return {
        "key": config.key,
        "ranking_key": entry.ranking_key,
        "ranking_label": entry.ranking_label,
        "crossover_text": crossover_words(points, reference) if reference else "",
        "run_id": entry.best_run_id,
        "label": f"{config.label} · {entry.hardware.gpu_name}",
        "short_label": _short_label(config),
        "baseline": not config.is_speculative,
        "baseline_key": baseline.key if baseline else None,
        "flags": _flags(entry),
        # Kept off every ranking (`verdicts.KEPT_OFF_FLAGS`): drawn, never on a frontier.
        "kept_off": any(getattr(entry, flag) for flag in verdicts.KEPT_OFF_FLAGS),
        **_curve(rows),
        "speedup": [r["speedup"] for r in rows],
        "crossover": crossover(rows),
        "rows": rows,
    }


def concurrency_view(
    *, entry: LeaderboardEntry | None, tpot_ms_objective: float = DEFAULT_TPOT_OBJECTIVE_MS
) -> dict | None:
    """A concurrency config's row: its curve and its paired baseline's, per-level figures and the
    crossover; None for a row of another protocol or one without concurrency points."""
    if entry is None or entry.config.protocol != CONCURRENCY:
        return None
    baseline_id = baseline_run_id(entry)
    stored = _stored([entry.best_run_id, baseline_id])
    line = _concurrency_line(entry, stored, tpot_ms_objective)
    if not line["rows"]:
        return None
    reference = _reference_points(entry, stored) if entry.config.is_speculative else []
    baseline_rows = concurrency_rows(reference)
    lines = [
        {"label": line["short_label"], "baseline": False}
        | _curve(line["rows"])
        | {"crossover": line["crossover"]}
    ]
    if baseline_rows:
        lines.append(
            {"label": "paired baseline", "baseline": True}
            | _curve(baseline_rows)
            | {"crossover": None}
        )
    return {
        "line": line,
        "chart": {"levels": line["levels"], "lines": lines, "crossover": line["crossover"]},
        "crossover": line["crossover"],
        "crossover_text": line["crossover_text"],
        # Clearly slower than its baseline already at the lowest level measured.
        "never_pays": line["crossover_text"].startswith("at or below"),
        "has_baseline": bool(baseline_rows),
    }


def _protocol_targets(protocol: str) -> list[tuple[str, str, str]]:
    rows = (
        LeaderboardEntry.objects.filter(retired=False, config__protocol=protocol)
        .values("config__target_name", "hardware__slug", "hardware__gpu_name")
        .annotate(rows=Count("id"))
        .order_by("-rows", "config__target_name", "hardware__slug")
    )
    return [(r["config__target_name"], r["hardware__slug"], r["hardware__gpu_name"]) for r in rows]


def concurrency_targets() -> list[tuple[str, str, str]]:
    """(target, hardware slug, GPU name) pairs with concurrency rows, the most rows first."""
    return _protocol_targets(CONCURRENCY)


def _protocol_entries(
    protocol: str, target_name: str, hardware_slug: str
) -> list[LeaderboardEntry]:
    """Each config's fastest current row of one protocol, target and hardware."""
    entries = (
        LeaderboardEntry.objects.filter(
            config__protocol=protocol,
            target_name=target_name,
            hardware__slug=hardware_slug,
            retired=False,
            best_run__isnull=False,
        )
        .select_related("config", "config__baseline", "config__draft", "hardware", "baseline_entry")
        .order_by("-tokens_per_second", "id")
    )
    best: dict[int, LeaderboardEntry] = {}
    for entry in entries:
        best.setdefault(entry.config_id, entry)
    return list(best.values())


def _lines_by_level(
    entries: list[LeaderboardEntry], tpot_ms_objective: float
) -> tuple[list[dict], list[int]]:
    """The entries' lines with rows (baselines first, then by name), each with its cell at every
    level any line has, and those levels in order."""
    stored = _stored([e.best_run_id for e in entries] + [baseline_run_id(e) for e in entries])
    lines = [_concurrency_line(e, stored, tpot_ms_objective) for e in entries]
    lines = [line for line in lines if line["rows"]]
    lines.sort(key=lambda line: (not line["baseline"], line["short_label"], line["key"]))
    levels = sorted({level for line in lines for level in line["levels"]})
    for line in lines:
        line["cells"] = _cells(line["rows"], levels)
    return lines, levels


def _cells(rows: list[dict], levels: list[int]) -> list[dict | None]:
    by_level = {row["concurrency"]: row for row in rows}
    return [by_level.get(level) for level in levels]


def concurrency_series(
    *,
    target_name: str,
    hardware_slug: str,
    level: int | None = None,
    tpot_ms_objective: float = DEFAULT_TPOT_OBJECTIVE_MS,
) -> dict:
    """Aggregate tok/s against concurrency, one line per config of a target on one hardware
    (baselines included, drawn dashed), each speculative line with its speedups and crossover;
    and the configs ranked at one level (`level`, else the lowest), within their ranking, by
    aggregate tok/s over rounds, ties by Welch (`verdicts.standings`), baselines apart."""
    entries = _protocol_entries(CONCURRENCY, target_name, hardware_slug)
    lines, levels = _lines_by_level(entries, tpot_ms_objective)
    chosen = level if level in levels else (levels[0] if levels else None)
    ranked = {e.config.key for e in entries if e.rank is not None or not e.config.is_speculative}
    return {
        "levels": levels,
        "lines": lines,
        "level": chosen,
        "ranking": _ranking_at(lines, chosen, competing=ranked) if chosen else [],
        # The goodput objective the levels' latency figures were judged at.
        "tpot_ms_objective": tpot_ms_objective,
    }


def _groups_at(lines: list[dict], level: int, *, competing: set[str]) -> list[dict]:
    """The competing lines' cells at one level, grouped by ranking: speculative rows apart from
    the ranking's baselines."""
    groups: dict[str, dict] = {}
    for line in lines:
        cell = next((row for row in line["rows"] if row["concurrency"] == level), None)
        if line["key"] not in competing or cell is None or cell["aggregate"] is None:
            continue
        group = groups.setdefault(
            line["ranking_key"], {"label": line["ranking_label"], "rows": [], "baselines": []}
        )
        (group["baselines"] if line["baseline"] else group["rows"]).append((line, cell))
    return list(groups.values())


def _ranking_at(lines: list[dict], level: int, *, competing: set[str]) -> list[dict]:
    """The lines at one level, one table per ranking: speculative lines ranked by aggregate
    tok/s with Welch's labels, the ranking's baseline as its denominator."""
    tables = []
    for group in _groups_at(lines, level, competing=competing):
        found = verdicts.standings(
            [
                verdicts.Contender(id=index, figure=cell["aggregate"], sample=cell["sample"])
                for index, (_, cell) in enumerate(group["rows"])
            ]
        )
        rows = [
            {"line": line, "cell": cell, "standing": found[index]}
            for index, (line, cell) in enumerate(group["rows"])
        ]
        rows.sort(key=lambda row: (row["standing"].rank, row["line"]["key"]))
        tables.append(
            {"label": group["label"], "rows": rows, "baselines": [c for _, c in group["baselines"]]}
        )
    return sorted(tables, key=lambda table: table["label"])
