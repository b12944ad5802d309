"""Every read Specboard's pages and API make: typed functions returning querysets or plain data."""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.core.paginator import Paginator
from django.db.models import Count, Exists, F, Max, OuterRef, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils.functional import cached_property

from leaderboard.models import (
    BoardVersion,
    Config,
    EngineBuild,
    Hardware,
    Job,
    LeaderboardEntry,
    ModelFile,
    Run,
)
from runner.config import SPEC_TYPES, parse_config
from runner.errors import ConfigError
from runner.protocols import token_budget
from runner.stats import t_critical_95

LEADERBOARD_ORDERINGS = {
    "tokens_per_second": "tok/s",
    "speedup": "speedup",
    "acceptance_rate": "acceptance",
    "tau": "tau",
}
SOURCES = {
    "all": "all results",
    "measured": "measured by our workers",
    "self-reported": "self-reported",
}
PROTOCOLS = ("quick", "context-sweep", "depth")
# The rows that compete in the main ranking: measured by our workers on a good build, real output.
RANKED = Q(synthetic=False, self_reported=False, degenerate=False, retired=False)
_MISSING = object()


# The counter as this process last read it, and when: (monotonic seconds, (value, layout)).
_board_version_seen: tuple[float, tuple[int, int]] | None = None


def board_version() -> tuple[int, int]:
    """The leaderboard's change counters (services.raise_board_version raises them): every
    change, and changes of the layout (rows that come, go or leave the ranking) alone.

    Read from the database at most once per SPECBOARD_BOARD_VERSION_SECONDS in each process, so
    a cached page costs no query; a change made by another process shows within that time.
    """
    global _board_version_seen
    now = time.monotonic()
    seen = _board_version_seen
    if seen is not None and now - seen[0] < settings.SPECBOARD_BOARD_VERSION_SECONDS:
        return seen[1]
    row = BoardVersion.objects.filter(pk=1).values_list("value", "layout").first()
    value = (row[0], row[1]) if row else (0, 0)
    _board_version_seen = (now, value)
    return value


def forget_board_version() -> None:
    """Make this process read the counter again (after it raised it itself)."""
    global _board_version_seen
    _board_version_seen = None


def board_cached[T](
    name: str, params: dict, compute: Callable[[], T], *, layout_only: bool = False
) -> T:
    """A leaderboard read, computed once per change of the rows and kept in the cache.

    The key carries the board version, so a recorded run, a retired build or a re-ranked row
    makes every cached page miss at once; `layout_only` reads (row counts, filter choices) miss
    only when rows come, go or leave the ranking. The timeout only bounds edits made outside the
    services.
    """
    value, layout = board_version()
    version = f"layout-{layout}" if layout_only else f"{value}"
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
    key = f"board:{version}:{name}:{digest[:32]}"
    found = cache.get(key, _MISSING)
    if found is _MISSING:
        found = compute()
        cache.set(key, found, settings.SPECBOARD_BOARD_CACHE_SECONDS)
    return found


class BoardPaginator(Paginator):
    """A paginator whose row count is cached with the board's layout, not recounted per change."""

    @cached_property
    def count(self) -> int:
        sql, params = self.object_list.query.sql_with_params()
        return board_cached(
            "row-count",
            {"sql": sql, "params": params},
            lambda: Paginator.count.func(self),  # type: ignore[attr-defined]
            layout_only=True,
        )


def spec_type_q(spec_type: str) -> Q:
    """Configs whose comma-separated speculative label contains exactly this type."""
    field = "config__spec_label"
    return (
        Q(**{field: spec_type})
        | Q(**{f"{field}__startswith": f"{spec_type},"})
        | Q(**{f"{field}__endswith": f",{spec_type}"})
        | Q(**{f"{field}__contains": f",{spec_type},"})
    )


def leaderboard_entries(
    *,
    target: str = "",
    hardware: str = "",
    spec_type: str = "",
    protocol: str = "",
    source: str = "all",
    ordering: str = "tokens_per_second",
    include_retired: bool = False,
    search: str = "",
    ranked_only: bool = False,
) -> QuerySet[LeaderboardEntry]:
    """Leaderboard rows, filtered and sorted best first; rows without the sort value come last.

    `ranked_only` keeps synthetic, self-reported, degenerate and retired rows out.
    """
    entries = LeaderboardEntry.objects.select_related(
        "config", "config__target", "config__draft", "hardware", "baseline_entry"
    )
    if not include_retired:
        entries = entries.filter(retired=False)
    if ranked_only:
        entries = entries.filter(RANKED)
    if search:
        entries = entries.filter(
            Q(config__label__icontains=search)
            | Q(config__target_name__icontains=search)
            | Q(hardware__gpu_name__icontains=search)
            | Q(engine_release__icontains=search)
            | Q(config__key__startswith=search)
        )
    if target:
        entries = entries.filter(config__target_name=target)
    if hardware:
        entries = entries.filter(hardware__slug=hardware)
    if spec_type:
        entries = entries.filter(spec_type_q(spec_type))
    if protocol:
        entries = entries.filter(config__protocol=protocol)
    if source == "measured":
        entries = entries.filter(self_reported=False)
    elif source == "self-reported":
        entries = entries.filter(self_reported=True)
    field = ordering if ordering in LEADERBOARD_ORDERINGS else "tokens_per_second"
    return entries.order_by(F(field).desc(nulls_last=True), "-tokens_per_second", "id")


def leaderboard_filter_choices() -> dict[str, list[tuple[str, str]]]:
    """The values that the leaderboard's filters offer, from the data present."""
    return board_cached("filter-choices", {}, _filter_choices, layout_only=True)


def _filter_choices() -> dict[str, list[tuple[str, str]]]:
    # One pass over the configs on the board for both lists; order_by() drops the default
    # ordering, which DISTINCT would otherwise include (one value per row, not per name).
    on_board = Exists(LeaderboardEntry.objects.filter(config=OuterRef("pk")))
    pairs = set(
        Config.objects.filter(on_board)
        .order_by()
        .values_list("target_name", "spec_label")
        .distinct()
    )
    targets = {target for target, _ in pairs}
    labels = {label for _, label in pairs}
    hardware = (
        Hardware.objects.filter(Exists(LeaderboardEntry.objects.filter(hardware=OuterRef("pk"))))
        .order_by("slug")
        .values_list("slug", "gpu_name")
    )
    present = sorted({part for label in labels for part in label.split(",")} - {"none"})
    spec_types = [("none", "none (baseline)")] + [(t, t) for t in present]
    spec_types += [(t, t) for t in SPEC_TYPES if t not in present]
    return {
        "target": [(t, t) for t in sorted(targets)],
        "hardware": [(slug, f"{name} ({slug})") for slug, name in hardware],
        "spec_type": spec_types,
        "protocol": [(p, p) for p in PROTOCOLS],
        "source": list(SOURCES.items()),
        "ordering": list(LEADERBOARD_ORDERINGS.items()),
    }


def config_by_key(*, key: str) -> Config | None:
    return Config.objects.select_related("target", "draft", "baseline").filter(key=key).first()


def config_entries(*, config: Config) -> QuerySet[LeaderboardEntry]:
    return config.entries.select_related("hardware", "baseline_entry__config").order_by(
        "-tokens_per_second"
    )


def config_runs(*, config: Config) -> QuerySet[Run]:
    return (
        config.runs.select_related("hardware", "job")
        .prefetch_related("requests")
        .order_by("created_at", "id")
    )


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


def user_jobs(*, user: AbstractBaseUser) -> QuerySet[Job]:
    return (
        Job.objects.filter(owner=user)
        .select_related("config", "hardware", "run")
        .order_by("-created_at")
    )


def job_by_id(*, job_id: int) -> Job | None:
    return (
        Job.objects.select_related("config", "hardware", "owner", "run").filter(id=job_id).first()
    )


def job_status(*, job: Job) -> dict:
    """What the job page and its JSON show: status, progress as a fraction, error and log tail."""
    progress = job.progress or {}
    total = progress.get("total") or 0
    run = _succeeded_run(job)
    return {
        "id": job.pk,
        "status": job.status,
        "active": job.is_active,
        "phase": progress.get("phase", ""),
        "done": progress.get("done", 0),
        "total": total,
        "tokens": progress.get("tokens", 0),
        "elapsed_s": progress.get("elapsed_s"),
        # A stored result means every request was measured, whatever the last progress event said.
        "percent": 100 if run else (round(100 * progress.get("done", 0) / total) if total else 0),
        "error": job.error,
        "log_tail": job.log_tail,
        "config_key": job.config.key,
        "run_id": run.pk if run else None,
        **job_cost(job=job),
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


def _succeeded_run(job: Job) -> Run | None:
    return getattr(job, "run", None) if job.status == Job.Status.SUCCEEDED else None


def job_token_budget(*, job: Job) -> dict[str, int] | None:
    """The runner's token budget for a job's config; None for configs it did not write."""
    try:
        return token_budget(parse_config(job.config.canonical))
    except ConfigError:
        return None


def job_cost(*, job: Job) -> dict:
    """What a job will cost, known before it runs (requests and tokens, warm-ups included), and
    once it succeeded what it took: seconds the GPU (or, on CPU builds, the engine) was held."""
    run = _succeeded_run(job)
    return {
        "token_budget": job_token_budget(job=job),
        "gpu_seconds": run.gpu_seconds if run else None,
        "engine_seconds": job_engine_seconds(run=run),
    }


def registered_models(*, role: str | None = None) -> QuerySet[ModelFile]:
    models = ModelFile.objects.all()
    return models.filter(role=role) if role else models


def servable_hardware() -> QuerySet[Hardware]:
    return Hardware.objects.exclude(queue_name="").order_by("gpu_name")


# Ranking with ties, staleness and the spec-specific views (issue 4).

_RELEASE_NUMBER = re.compile(r"(\d+)")


def release_number(release: str) -> int | None:
    """llama.cpp releases are numbered builds (b11434); None for anything else ('unreported')."""
    match = _RELEASE_NUMBER.search(release or "")
    return int(match.group(1)) if match else None


def newest_release_number() -> int | None:
    """The newest engine release that any current (non-retired) leaderboard row was measured with."""
    return board_cached("newest-release", {}, _newest_release_number, layout_only=True)


def _newest_release_number() -> int | None:
    # The builds table is small; EXISTS asks the rows only whether each release is still in use.
    in_use = Exists(
        LeaderboardEntry.objects.filter(engine_release=OuterRef("release"), retired=False)
    )
    releases = EngineBuild.objects.filter(in_use).values_list("release", flat=True)
    numbers = [n for n in map(release_number, releases) if n is not None]
    return max(numbers, default=None)


def is_stale(release: str, newest: int | None) -> bool:
    number = release_number(release)
    return newest is not None and number is not None and number < newest


def overlaps(low: float | None, high: float | None, other_low, other_high) -> bool:
    """Whether two 95% intervals share any value; a missing interval overlaps nothing."""
    if None in (low, high, other_low, other_high):
        return False
    return low <= other_high and other_low <= high


def page_ranks(
    entries: QuerySet[LeaderboardEntry], page: list[LeaderboardEntry], *, offset: int, ordering: str
) -> dict[int, tuple[int, bool]]:
    """Rank a page's rows by decode tok/s within the filtered rows: {id: (rank, tied with leader)}.

    Rows whose 95% interval overlaps the leader's share its rank 1; the others take the usual
    competition rank (one more than the number of rows faster than them). Only the page's rows
    are ranked, in the database, never every filtered row in Python.
    """
    if not page:
        return {}
    # NULLS LAST as the tok/s index is built, so the leader is read from it, not sorted for.
    leader = (
        entries.order_by(F("tokens_per_second").desc(nulls_last=True), "id")
        .values_list("id", "tokens_per_second", "ci95_low", "ci95_high", "tps_definition")
        .first()
    )
    if leader is None:
        return {}
    if ordering == "tokens_per_second":
        faster = _faster_counts_on_a_speed_page(entries, page, offset=offset)
    else:
        faster = _faster_counts(entries, page)
    ranks = {}
    for entry in page:
        tied = (
            entry.pk != leader[0]
            and entry.tps_definition == leader[4]
            and overlaps(entry.ci95_low, entry.ci95_high, leader[2], leader[3])
        )
        ranks[entry.pk] = (1, True) if tied else (faster[entry.pk] + 1, False)
    return ranks


def _faster_counts_on_a_speed_page(
    entries: QuerySet[LeaderboardEntry], page: list[LeaderboardEntry], *, offset: int
) -> dict[int, int]:
    """Rows faster than each row of a page sorted by tok/s, from the page's offset.

    Every row before the page is at least as fast as its first row, so it is faster than any
    page row that is slower than that one; only the rows tied with the first need one count.
    """
    top = page[0].tokens_per_second
    strictly_faster_than_top = (
        entries.filter(tokens_per_second__gt=top).order_by().count() if offset else 0
    )
    counts = {}
    for index, entry in enumerate(page):
        before_page = offset if entry.tokens_per_second < top else strictly_faster_than_top
        on_page = sum(
            1 for other in page[:index] if other.tokens_per_second > entry.tokens_per_second
        )
        counts[entry.pk] = before_page + on_page
    return counts


def _faster_counts(
    entries: QuerySet[LeaderboardEntry], page: list[LeaderboardEntry]
) -> dict[int, int]:
    """Rows faster than each page row, for pages in another order: one pass over the rows."""
    speeds = sorted({entry.tokens_per_second for entry in page})
    counts = entries.order_by().aggregate(
        **{
            f"faster_{index}": Count("pk", filter=Q(tokens_per_second__gt=speed))
            for index, speed in enumerate(speeds)
        }
    )
    by_speed = {speed: counts[f"faster_{index}"] for index, speed in enumerate(speeds)}
    return {entry.pk: by_speed[entry.tokens_per_second] for entry in page}


def leaderboard_rows(
    *, entries: list[LeaderboardEntry], ranks: dict[int, tuple[int, bool]], newest: int | None
) -> list[dict]:
    """The rows a page shows: each entry with its rank, tie with the leader and staleness."""
    return [
        {
            "entry": entry,
            "rank": ranks.get(entry.pk, (None, False))[0],
            "tied": ranks.get(entry.pk, (None, False))[1],
            "stale": is_stale(entry.engine_release, newest),
        }
        for entry in entries
    ]


def ranked_rows(entries: QuerySet[LeaderboardEntry], *, limit: int) -> list[dict]:
    """The first `limit` rows of a tok/s-ordered selection, ranked, with staleness."""
    page = list(entries[:limit])
    return leaderboard_rows(
        entries=page,
        ranks=page_ranks(entries, page, offset=0, ordering="tokens_per_second"),
        newest=newest_release_number(),
    )


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


def welch_difference(
    *, mean_a: float, stdev_a: float, n_a: int, mean_b: float, stdev_b: float, n_b: int
) -> dict | None:
    """Difference of means a - b with its 95% Welch interval; None when either side has n < 2."""
    if n_a < 2 or n_b < 2 or stdev_a is None or stdev_b is None:
        return None
    var_a, var_b = stdev_a**2 / n_a, stdev_b**2 / n_b
    difference = mean_a - mean_b
    if var_a + var_b == 0:
        return {"difference": difference, "low": difference, "high": difference, "df": None}
    df = (var_a + var_b) ** 2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
    half = t_critical_95(max(1, math.floor(df))) * math.sqrt(var_a + var_b)
    return {"difference": difference, "low": difference - half, "high": difference + half, "df": df}


def entry_difference(*, entry: LeaderboardEntry, reference: LeaderboardEntry) -> dict | None:
    """Two leaderboard rows' tok/s difference (entry - reference) with its 95% Welch interval."""
    return welch_difference(
        mean_a=entry.tokens_per_second,
        stdev_a=entry.stdev,
        n_a=entry.n,
        mean_b=reference.tokens_per_second,
        stdev_b=reference.stdev,
        n_b=reference.n,
    )


def best_entry(*, config: Config) -> LeaderboardEntry | None:
    return (
        config.entries.select_related("hardware", "best_run", "baseline_entry")
        .order_by("retired", "-tokens_per_second")
        .first()
    )


def comparison(*, configs: list[Config]) -> dict:
    """Two to four configs side by side: best rows, overlaid chart data, differences to the first."""
    columns = []
    for config in configs:
        entry = best_entry(config=config)
        run = entry.best_run if entry else None
        columns.append(
            {
                "config": config,
                "entry": entry,
                "run": run,
                "acceptance_by_position": acceptance_by_position(run=run),
                "depth_points": _depth_points(run) if run else [],
            }
        )
    reference = columns[0]["entry"]
    for column in columns:
        entry = column["entry"]
        column["difference"] = (
            entry_difference(entry=entry, reference=reference)
            if entry is not None and reference is not None and entry is not reference
            else None
        )
    chart = {
        "labels": [c["config"].label for c in columns],
        "tokens_per_second": [
            c["entry"].tokens_per_second if c["entry"] else None for c in columns
        ],
        "ci95_low": [c["entry"].ci95_low if c["entry"] else None for c in columns],
        "ci95_high": [c["entry"].ci95_high if c["entry"] else None for c in columns],
        "acceptance_by_position": [c["acceptance_by_position"] for c in columns],
        "depths": [
            {
                "depths": [p["input_tokens"] for p in c["depth_points"]],
                "tokens_per_second": [
                    (p.get("decode_tokens_per_second") or {}).get("mean") for p in c["depth_points"]
                ],
            }
            for c in columns
        ],
    }
    has_depths = any(len(c["depth_points"]) >= 2 for c in columns)
    return {"columns": columns, "chart": chart, "has_depths": has_depths}


def hardware_summaries() -> QuerySet[Hardware]:
    return Hardware.objects.annotate(results=Count("entries")).order_by("gpu_name", "slug")


def hardware_by_slug(*, slug: str) -> Hardware | None:
    return Hardware.objects.filter(slug=slug).first()


def target_summaries() -> list[dict]:
    """Each target model with its number of leaderboard rows and hardware kinds."""
    rows = (
        LeaderboardEntry.objects.values("config__target_name")
        .annotate(results=Count("id"), hardware=Count("hardware", distinct=True))
        .order_by("config__target_name")
    )
    return [
        {"name": r["config__target_name"], "results": r["results"], "hardware": r["hardware"]}
        for r in rows
    ]


def best_config_for(
    *, target_name: str, memory_bytes: int, hardware: Hardware | None = None
) -> QuerySet[LeaderboardEntry]:
    """Rows that fit the memory, fastest first: lossless (or plain baseline), measured, not synthetic."""
    entries = LeaderboardEntry.objects.filter(
        RANKED,
        Q(lossless=True) | Q(config__spec_label="none"),
        config__target_name=target_name,
        peak_memory_bytes__isnull=False,
        peak_memory_bytes__lte=memory_bytes,
    ).select_related("config", "hardware")
    if hardware is not None:
        entries = entries.filter(hardware=hardware)
    return entries.order_by("-tokens_per_second", "id")


def run_by_id(*, run_id: int) -> Run | None:
    return Run.objects.select_related("config", "hardware", "job").filter(id=run_id).first()


REQUEST_EXPORT_FIELDS = (
    "index", "phase", "point", "input_tokens", "prompt_n", "prompt_ms", "predicted_n",
    "predicted_ms", "decode_tokens_per_second", "end_to_end_tokens_per_second", "ttft_ms",
    "wall_ms", "draft_n", "draft_n_accepted", "verify_steps", "tau", "accepted_per_position",
    "output_sha256", "first_divergence",
)  # fmt: skip


def request_records(*, run: Run) -> list[dict]:
    """The run's raw per-request records, as plain dicts in the order they were measured."""
    return list(run.requests.order_by("index").values(*REQUEST_EXPORT_FIELDS))


def job_remaining_seconds(*, status: dict) -> float | None:
    """A linear estimate of the time left: elapsed per request done, times requests to go."""
    done, total, elapsed = (
        status.get("done") or 0,
        status.get("total") or 0,
        status.get("elapsed_s"),
    )
    if not status.get("active") or not done or not total or elapsed is None or done >= total:
        return None
    return elapsed / done * (total - done)


def engine_builds() -> QuerySet[EngineBuild]:
    return EngineBuild.objects.order_by("-first_seen", "release")


def job_engine_seconds(*, run: Run | None) -> float | None:
    """Seconds llama-server was held for a run (GPU or not), as the runner reported them."""
    if run is None:
        return None
    summary = (run.raw_result or {}).get("summary") or {}
    seconds = summary.get("engine_seconds")
    baseline = ((run.raw_result or {}).get("baseline") or {}).get("summary") or {}
    if seconds is not None and baseline.get("engine_seconds") is not None:
        seconds += baseline["engine_seconds"]
    return seconds


def leaderboard_from_runs(*, limit: int = 50) -> list[dict]:
    """The leaderboard's first page aggregated from every run at read time.

    Only for comparison (bench/site_load.py): the site reads the maintained LeaderboardEntry rows.
    """
    groups = list(
        Run.objects.filter(degenerate=False)
        .values("config_id", "hardware_id", "engine_release")
        .annotate(
            tokens_per_second=Max(Coalesce("decode_mean", "e2e_mean")), runs_count=Count("id")
        )
        .order_by(F("tokens_per_second").desc(nulls_last=True), "config_id", "hardware_id")[:limit]
    )
    configs = Config.objects.in_bulk({row["config_id"] for row in groups})
    hardware = Hardware.objects.in_bulk({row["hardware_id"] for row in groups})
    return [
        {
            "config": configs[row["config_id"]].key,
            "label": configs[row["config_id"]].label,
            "target_name": configs[row["config_id"]].target_name,
            "spec_label": configs[row["config_id"]].spec_label,
            "hardware": hardware[row["hardware_id"]].slug,
            "engine_release": row["engine_release"],
            "tokens_per_second": row["tokens_per_second"],
            "runs_count": row["runs_count"],
        }
        for row in groups
    ]
