"""The reads behind the pages that gather several: each returns what its page renders, from the
request its view has already parsed and validated, so a view only parses, calls and renders.

- `board_ranked` and `board_kept_off`: the parts of a leaderboard page: a page of ranked rows
  with their ranks, each
  ranking's baseline beside its heading as the denominator and the baselines of the page's
  rankings; and the rows kept off the ranking (test weights apart). The page's other parts are
  `selectors.board.glance` (the fastest draft per GPU and target) and the speedup chart.
- `config_page`: a config's rows and a page of its runs, its one best run (the run its best row
  stores: the verdicts' rule) and that run's figures (energy, acceptance by position and its
  spread), the memory trade-off, the concurrency and categories figures, and whether it can be
  run again.
- `run_page`: a page of a run's request records, each with its point's label, its energy and
  spread, and whether its engine release is stale.
- `run_figures`: what a run's and its config's pages show of its stored result and requests
  (energy and roofline, the spread, acceptance by position, point labels, the request count).
- `context_page`: the context-depth lines, each with one cell per depth any of them measured.
- `concurrency_page`: the concurrency protocol's lines for a target and hardware, ranked at a
  level, and the figures its chart draws.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from functools import cached_property
from typing import TypedDict

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet

from leaderboard import verdicts
from leaderboard.models import Config, LeaderboardEntry, Run
from leaderboard.selectors.answers.serving import DEFINITIONS as LATENCY_DEFINITIONS
from leaderboard.selectors.answers.serving import concurrency_pareto, run_latency
from leaderboard.selectors.board.ranks import page_ranks
from leaderboard.selectors.board.rows import (
    RANKED,
    baseline_rows,
    is_stale,
    leaderboard_entries,
    leaderboard_rows,
    newest_release_number,
)
from leaderboard.selectors.evidence.catalogue import (
    best_entry,
    config_entries,
    config_runs,
    point_labels,
    request_records_page,
    run_by_id,
)
from leaderboard.selectors.evidence.categories import category_view
from leaderboard.selectors.evidence.charts import (
    acceptance_by_position,
    concurrency_speedup_lines,
    config_chart_data,
    context_groups,
    context_series,
    memory_tradeoff,
)
from leaderboard.selectors.evidence.energy import energy_figures
from leaderboard.selectors.evidence.output_length import output_length_view
from leaderboard.selectors.evidence.protocols import concurrency_series, concurrency_view
from leaderboard.selectors.evidence.provenance import provenance_facts
from leaderboard.selectors.evidence.quality import quality_view
from leaderboard.selectors.evidence.spread import acceptance_spread
from leaderboard.selectors.jobs.estimates import rerun_source
from leaderboard.stored_results import StoredResult, stored_requests, stored_result, whole_file
from leaderboard.web import page_cache
from runner.stats import DEFAULT_TPOT_OBJECTIVE_MS

# The figures of a depth that the context page's table shows.
CONTEXT_FIGURES = (
    "speedup",
    "speedup_ci95_low",
    "speedup_ci95_high",
    "tokens_per_second",
    "ci95_low",
    "ci95_high",
    "n",
)
# What the concurrency chart draws of each line.
CONCURRENCY_CHART_FIELDS = ("short_label", "baseline", "levels", "aggregate", "crossover")


class BoardSelection(TypedDict):
    """What rows a board page chooses among (`board_selection`): `leaderboard_entries`' filters."""

    target: str
    hardware: str
    spec_type: str
    protocol: str
    source: str
    search: str


class RowSetPaginator(Paginator):
    """A paginator of board rows whose count is kept until rows come or go
    (`page_cache.kept_while_row_set_holds`), under `selection`, what chose the rows."""

    def __init__(self, object_list: QuerySet, per_page: int, *, selection: Hashable) -> None:
        super().__init__(object_list, per_page)
        self.selection = selection

    @cached_property
    def count(self) -> int:
        return page_cache.kept_while_row_set_holds(
            ("row-count", self.selection),
            lambda: Paginator.count.func(self),  # type: ignore[attr-defined]  # the uncached count
        )


def board_selection(*, filters: Mapping[str, str], search: str) -> BoardSelection:
    """What rows a board page chooses among, from validated filters and a search term (the
    ordering and the page number aside)."""
    return {
        "target": filters["target"],
        "hardware": filters["hardware"],
        "spec_type": filters["spec_type"],
        "protocol": filters["protocol"],
        "source": filters["source"] or "all",
        "search": search,
    }


def _board_pages(
    *, filters: Mapping[str, str], search: str, include_all: bool, page_size: int
) -> tuple[QuerySet[LeaderboardEntry], Paginator]:
    """The ranked rows the filters and search match, and their paginator."""
    selection = board_selection(filters=filters, search=search)
    entries = leaderboard_entries(
        **selection,
        ordering=filters["ordering"] or "tokens_per_second",
        ranked_only=not include_all,
        include_retired=include_all,
    )
    if search:  # free text: counted each time, never kept (made-up queries fill no cache)
        return entries, Paginator(entries, page_size)
    key = ("board", tuple(sorted(selection.items())), include_all)
    return entries, RowSetPaginator(entries, page_size, selection=key)


def board_page_number(
    *, filters: Mapping[str, str], search: str, include_all: bool, page: int, page_size: int
) -> int:
    """The page of `board_ranked` that a requested number shows: a number past the last is the
    last."""
    _, paginator = _board_pages(
        filters=filters, search=search, include_all=include_all, page_size=page_size
    )
    return min(max(page, 1), paginator.num_pages)


def board_ranked(
    *, filters: Mapping[str, str], search: str, include_all: bool, page: int, page_size: int
) -> dict:
    """A page of the leaderboard's ranked rows for validated filters (each a known choice or ""),
    a search term and the flagged-rows toggle: {"page", "rows", "baselines"}. A row that starts
    a ranking carries its baseline ("baseline", the denominator of its speedups) where one is
    measured. With the toggle on, the kept-off rows are in "rows" (unranked) and the baselines
    are not shown apart."""
    selection = board_selection(filters=filters, search=search)
    ordering = filters["ordering"] or "tokens_per_second"
    entries, paginator = _board_pages(
        filters=filters, search=search, include_all=include_all, page_size=page_size
    )
    shown = paginator.get_page(page)
    newest = newest_release_number()
    shown_entries = list(shown.object_list)
    ranks = page_ranks(entries, shown_entries, offset=shown.start_index() - 1, ordering=ordering)
    rows = leaderboard_rows(entries=shown_entries, ranks=ranks, newest=newest)
    if include_all:
        return {"page": shown, "rows": rows, "baselines": []}
    # The denominators of the page's rankings (or, with no ranked row, every baseline the
    # filters match: "speculative type: none" asks for them), shown apart.
    denominators = (
        baseline_rows(rankings=shown_entries)
        if shown_entries
        else list(leaderboard_entries(**selection, ranked_only=True, baselines=True)[:page_size])
    )
    baselines = leaderboard_rows(entries=denominators, ranks={}, newest=newest)
    by_ranking: dict[str, dict] = {}
    for baseline in baselines:
        by_ranking.setdefault(baseline["entry"].ranking_key, baseline)
    for row in rows:
        if row["heading"]:
            row["baseline"] = by_ranking.get(row["entry"].ranking_key)
    return {"page": shown, "rows": rows, "baselines": baselines}


def ranked_rows(entries: QuerySet[LeaderboardEntry], *, limit: int) -> list[dict]:
    """The first `limit` rows of a tok/s-ordered selection (a model's, a GPU kind's), ranked,
    with staleness."""
    shown = list(entries[:limit])
    ranks = page_ranks(entries, shown, offset=0, ordering="tokens_per_second")
    return leaderboard_rows(entries=shown, ranks=ranks, newest=newest_release_number())


def board_kept_off(*, filters: Mapping[str, str], search: str, page_size: int) -> dict:
    """The rows the filters and search match that are kept off the ranking, the first
    `page_size` of each kind: {"kept_off", "test_weights"} (the rows of test weights, random or
    demo weights, apart)."""
    selection = board_selection(filters=filters, search=search)
    newest = newest_release_number()
    kept_off_entries = leaderboard_entries(**selection, include_retired=True).exclude(RANKED)

    def rows(entries) -> list[dict]:
        return leaderboard_rows(entries=list(entries[:page_size]), ranks={}, newest=newest)

    return {
        "kept_off": rows(kept_off_entries.filter(test_weights=False)),
        "test_weights": rows(kept_off_entries.filter(test_weights=True)),
    }


def run_figures(*, run_id: int) -> dict | None:
    """What the pages show of a run's stored result and requests: {"release": its engine release,
    "stored": the stored result (`StoredResult`, its requests with it), "energy", "spread",
    "acceptance" (by draft position), "labels" (each point's), "requests" (how many records)};
    None for no such run. A stored result and its records are written once, when the run is
    recorded."""
    run = run_by_id(run_id=run_id)
    if run is None:
        return None
    # The whole stored result, its requests read once for the roofline and a concurrency run's
    # lowest level (once per run and change of the board).
    requests = stored_requests([run.pk])[run.pk]
    stored = StoredResult.of(run.raw_result, requests=requests)
    acceptance = acceptance_by_position(run=run)
    return {
        "release": run.engine_release,
        "stored": stored,
        # The grade of its greedy output against the baseline measured beside it, and each
        # GPU's figures of a multi-GPU host, as the run page shows them.
        "fidelity": stored.fidelity,
        "gpus": stored.gpus,
        "energy": energy_figures(whole_file(run.raw_result, requests)),
        "spread": acceptance_spread(run=run),
        "acceptance": {"positions": list(range(1, len(acceptance) + 1)), "rate": acceptance},
        "labels": point_labels(run=run),
        "requests": run.requests.count(),
        "lowest_level": _lowest_level(run, stored),
    }


def _lowest_level(run: Run, stored: StoredResult) -> dict | None:
    """A concurrency run's figures on the one basis its row uses, its lowest level
    (`verdicts.LOWEST_LEVEL_BASIS`): aggregate tok/s, the speedup over the baseline batch its row
    divides by (else the one measured in the same job), acceptance, tau and J/token; None under
    other protocols."""
    if run.config.protocol != verdicts.CONCURRENCY:
        return None
    baseline_id = (
        LeaderboardEntry.objects.filter(best_run=run)
        .values_list("baseline_run_id", flat=True)
        .first()
    )
    if baseline_id is None and run.job_id and run.config.baseline_id:
        baseline_id = (
            Run.objects.filter(
                config_id=run.config.baseline_id, provenance__measured_with_job=run.job_id
            )
            .values_list("pk", flat=True)
            .first()
        )
    figures = verdicts.lowest_level_figures(
        stored.stored_points,
        list(stored.requests),
        stored_result(baseline_id).stored_points if baseline_id else None,
    )
    if figures is None:
        return None
    drafting = figures.drafting
    interval = figures.interval
    return {
        "level": figures.level,
        "tokens_per_second": figures.sample.mean,
        "ci95_low": interval[0] if interval else None,
        "ci95_high": interval[1] if interval else None,
        "rounds": figures.sample.n,
        "speedup": figures.speedup,
        "acceptance": drafting.acceptance if drafting else None,
        "tau": drafting.tau if drafting else None,
        "verify_steps": drafting.verify_steps if drafting else None,
        "joules_per_token": figures.joules_per_token,
        "basis": verdicts.LOWEST_LEVEL_BASIS,
    }


def _best_run(*, config: Config, entry: LeaderboardEntry | None) -> Run | None:
    """The config's one best run: the run its best row stores (the verdicts' rule); a config
    without a row yet has none."""
    if entry is None or entry.best_run_id is None:
        return None
    return config_runs(config=config).filter(pk=entry.best_run_id).first()


def config_page(*, config: Config, runs_page: int, page_size: int) -> dict:
    """What a config's page shows: its rows and a page of its runs ("runs", "runs_page":
    `page_size` a page, oldest first; a number past the last is the last), its one best run
    ("provenance_run") and that run's figures, the memory trade-off on its best row's hardware,
    the concurrency and categories figures of its best row, and whether this site can run it
    again ("rerun")."""
    shown = Paginator(config_runs(config=config), page_size).get_page(runs_page)
    runs = list(shown.object_list)
    top = best_entry(config=config)
    best = _best_run(config=config, entry=top)
    figures = run_figures(run_id=best.pk) if best else None
    memory = (
        memory_tradeoff(target_name=config.target_name, hardware=top.hardware)
        if top is not None and config.is_speculative
        else []
    )
    return {
        # The concurrency and categories protocols' figures (None for other protocols).
        "concurrency": concurrency_view(entry=top),
        "categories": category_view(entry=top),
        # The output-length protocol's per-length figures (None for other protocols).
        "output_length": output_length_view(entry=top),
        "energy": figures["energy"] if figures else None,
        # The quality protocol's accuracies and paired difference of the best run (None else).
        "quality": quality_view(figures["stored"]) if figures else None,
        "entries": leaderboard_rows(
            entries=list(config_entries(config=config)), ranks={}, newest=newest_release_number()
        ),
        "runs": runs,
        "runs_page": shown,
        "provenance_run": best,
        "provenance": provenance_facts(run=best) if best else None,
        # The best run's latency percentiles and goodput per point (selectors.answers.serving).
        "latency": run_latency(run_id=best.pk) if best else None,
        "chart": config_chart_data(runs=runs, first=shown.start_index()),
        "acceptance": figures["acceptance"] if figures else {"positions": [], "rate": []},
        "spread": figures["spread"] if figures else None,
        "memory": {"points": memory, "highlight": config.key},
        "memory_hardware": top.hardware if top else None,
        # "Run this again": the form filled in, or why this site cannot run it.
        "rerun": rerun_source(config=config),
    }


def run_page(*, run: Run, requests_page: int, page_size: int) -> dict:
    """What a run's page shows: a page of its request records ("records", "requests_page":
    `page_size` a page in the order they were measured; a number past the last is the last),
    each with its point's label, how many it has ("requests"), its energy figures, the spread
    of its acceptance and whether its engine release is stale."""
    figures = run_figures(run_id=run.pk) or {}
    shown: Page = request_records_page(
        run=run, number=requests_page, size=page_size, count=figures["requests"]
    )
    labels = figures["labels"]
    return {
        "records": [
            record | {"point_label": labels.get(record["point"])} for record in shown.object_list
        ],
        "lowest_level": figures.get("lowest_level"),
        "requests_page": shown,
        "requests": figures["requests"],
        "energy": figures["energy"],
        "quality": quality_view(figures["stored"]),
        "fidelity": figures["fidelity"],
        "gpus": figures["gpus"],
        "provenance": provenance_facts(run=run),
        "spread": figures["spread"],
        # Latency percentiles and goodput per point, from its requests (selectors.answers.serving).
        "latency": run_latency(run_id=run.pk),
        "stale": is_stale(run.engine_release, newest_release_number()),
    }


def context_page(*, target_name: str, hardware_slug: str) -> dict:
    """The context-depth lines of a target and hardware ("" for any), every depth any line
    measured, and each line's cells: its figures at each of those depths (None where it has
    none), for the table; the chart draws the same lines."""
    lines = context_series(target_name=target_name, hardware_slug=hardware_slug)
    depths = sorted({depth for line in lines for depth in line["depths"]})
    for line in lines:
        by_depth = {
            depth: {name: line[name][index] for name in CONTEXT_FIGURES}
            for index, depth in enumerate(line["depths"])
        }
        line["cells"] = [by_depth.get(depth) for depth in depths]
    groups = context_groups(lines)
    return {
        "lines": lines,
        "depths": depths,
        "groups": groups,
        "chart": {"depths": depths, "lines": lines, "groups": groups},
    }


def concurrency_page(
    *,
    target_name: str,
    hardware_slug: str,
    level: int | None,
    tpot_ms_objective: float = DEFAULT_TPOT_OBJECTIVE_MS,
) -> dict:
    """The concurrency lines of a target on a hardware, ranked at `level` (None: the series'
    own choice), and what the chart draws of them; each level's latency with its goodput at
    `tpot_ms_objective`, and the throughput per GPU against tok/s per user ("pareto",
    `selectors.answers.serving`); empty without a target."""
    series = (
        concurrency_series(
            target_name=target_name,
            hardware_slug=hardware_slug,
            level=level,
            tpot_ms_objective=tpot_ms_objective,
        )
        if target_name
        else {"levels": [], "lines": [], "level": None, "ranking": []}
    )
    chart = {
        "levels": series["levels"],
        "lines": [
            {key: line[key] for key in CONCURRENCY_CHART_FIELDS} | {"label": line["short_label"]}
            for line in series["lines"]
        ],
        # Speedup against concurrency, its intervals and verdicts: the chart beside the tok/s one.
        "speedup_lines": concurrency_speedup_lines(lines=series["lines"]),
    }
    return {
        "series": series,
        "chart": chart,
        "pareto": concurrency_pareto(lines=series["lines"], hardware_slug=hardware_slug),
        "tpot_ms_objective": tpot_ms_objective,
        "latency_definitions": LATENCY_DEFINITIONS,
    }
