"""The reads behind the pages that gather several: each returns what its page renders, from the
request its view has already parsed and validated, so a view only parses, calls and renders.

- `board_page`: a page of the leaderboard: its rows with their ranks, the rows kept off the
  ranking, the baselines of the page's rankings (their denominators, shown apart) and the
  speedup chart of the chosen target and hardware.
- `config_page`: a config's runs and rows, its one best run (the run its best row stores: the
  verdicts' rule) and that run's figures (energy, acceptance by position and its spread), the
  memory trade-off, the concurrency and categories figures, and whether it can be run again.
- `run_page`: a run's request records, each with its point's label, its energy and spread, and
  whether its engine release is stale.
- `context_page`: the context-depth lines, each with one cell per depth any of them measured.
- `concurrency_page`: the concurrency protocol's lines for a target and hardware, ranked at a
  level, and the figures its chart draws.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from leaderboard.models import Config, LeaderboardEntry, Run
from leaderboard.selectors.board import (
    RANKED,
    BoardPaginator,
    baseline_rows,
    board_definitions,
    is_stale,
    leaderboard_entries,
    leaderboard_rows,
    newest_release_number,
)
from leaderboard.selectors.board_charts import speedup_chart
from leaderboard.selectors.catalogue import (
    best_entry,
    config_entries,
    config_runs,
    point_labels,
    request_records,
)
from leaderboard.selectors.categories import category_view
from leaderboard.selectors.charts import (
    acceptance_by_position,
    config_chart_data,
    context_series,
    memory_tradeoff,
)
from leaderboard.selectors.energy import energy_figures
from leaderboard.selectors.estimates import rerun_source
from leaderboard.selectors.protocols import concurrency_series, concurrency_view
from leaderboard.selectors.ranks import page_ranks
from leaderboard.selectors.spread import acceptance_spread

# The figures of a depth that the context page's table shows.
CONTEXT_FIGURES = ("speedup", "tokens_per_second", "ci95_low", "ci95_high", "n")
# What the concurrency chart draws of each line.
CONCURRENCY_CHART_FIELDS = ("short_label", "baseline", "levels", "aggregate", "crossover")


def board_page(
    *, filters: Mapping[str, str], search: str, include_all: bool, page: int, page_size: int
) -> dict:
    """A page of the leaderboard for validated filters (each a known choice or ""), a search
    term and the flagged-rows toggle: {"page", "rows", "kept_off", "baselines",
    "speedup_chart"}. With the toggle on, the kept-off rows are in "rows" (unranked) and
    neither "kept_off" nor "baselines" is shown apart."""
    selection = {
        "target": filters["target"],
        "hardware": filters["hardware"],
        "spec_type": filters["spec_type"],
        "protocol": filters["protocol"],
        "source": filters["source"] or "all",
        "search": search,
    }
    ordering = filters["ordering"] or "tokens_per_second"
    entries = leaderboard_entries(
        **selection, ordering=ordering, ranked_only=not include_all, include_retired=include_all
    )
    shown = BoardPaginator(entries, page_size).get_page(page)
    newest = newest_release_number()
    page_entries = list(shown.object_list)
    ranks = page_ranks(entries, page_entries, offset=shown.start_index() - 1, ordering=ordering)
    rows = leaderboard_rows(
        entries=page_entries,
        ranks=ranks,
        newest=newest,
        ordering=ordering,
        definitions=board_definitions(entries),
    )
    if include_all:
        kept_off, baselines = [], []
    else:
        kept_off_entries = leaderboard_entries(**selection, include_retired=True).exclude(RANKED)
        kept_off = leaderboard_rows(
            entries=list(kept_off_entries[:page_size]), ranks={}, newest=newest
        )
        # The denominators of the page's rankings (or, with no ranked row, every baseline the
        # filters match: "speculative type: none" asks for them), shown apart.
        denominators = (
            baseline_rows(rankings=[entry.ranking_key for entry in page_entries])
            if page_entries
            else list(
                leaderboard_entries(**selection, ranked_only=True, baselines=True)[:page_size]
            )
        )
        baselines = leaderboard_rows(entries=denominators, ranks={}, newest=newest)
    return {
        "page": shown,
        "rows": rows,
        "kept_off": kept_off,
        "baselines": baselines,
        # Speedup by config for the selected target and hardware (ranked rows only).
        "speedup_chart": speedup_chart(
            target=filters["target"],
            hardware=filters["hardware"],
            spec_type=filters["spec_type"],
            protocol=filters["protocol"],
        ),
    }


def _best_run(entry: LeaderboardEntry | None, runs: Iterable[Run]) -> Run | None:
    """The config's one best run: the run its best row stores (the verdicts' rule); a config
    without a row yet has none."""
    if entry is None:
        return None
    return next((run for run in runs if run.pk == entry.best_run_id), None)


def config_page(*, config: Config) -> dict:
    """What a config's page shows: its runs and rows, its one best run ("provenance_run") and
    that run's figures, the memory trade-off on its best row's hardware, the concurrency and
    categories figures of its best row, and whether this site can run it again ("rerun")."""
    runs = list(config_runs(config=config))
    top = best_entry(config=config)
    best = _best_run(top, runs)
    memory = (
        memory_tradeoff(target_name=config.target_name, hardware=top.hardware)
        if top is not None and config.is_speculative
        else []
    )
    acceptance = acceptance_by_position(run=best)
    return {
        # The concurrency and categories protocols' figures (None for other protocols).
        "concurrency": concurrency_view(entry=top),
        "categories": category_view(entry=top),
        "energy": energy_figures(best.raw_result) if best else None,
        "entries": leaderboard_rows(
            entries=list(config_entries(config=config)), ranks={}, newest=newest_release_number()
        ),
        "runs": runs,
        "provenance_run": best,
        "chart": config_chart_data(runs=runs),
        "acceptance": {"positions": list(range(1, len(acceptance) + 1)), "rate": acceptance},
        "spread": acceptance_spread(run=best),
        "memory": {"points": memory, "highlight": config.key},
        "memory_hardware": top.hardware if top else None,
        # "Run this again": the form filled in, or why this site cannot run it.
        "rerun": rerun_source(config=config),
    }


def run_page(*, run: Run) -> dict:
    """What a run's page shows: its request records, each with its point's label, its energy
    figures, the spread of its acceptance and whether its engine release is stale."""
    labels = point_labels(run=run)
    return {
        "records": [
            record | {"point_label": labels.get(record["point"])}
            for record in request_records(run=run)
        ],
        "energy": energy_figures(run.raw_result),
        "spread": acceptance_spread(run=run),
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
    return {"lines": lines, "depths": depths, "chart": {"depths": depths, "lines": lines}}


def concurrency_page(*, target_name: str, hardware_slug: str, level: int | None) -> dict:
    """The concurrency lines of a target on a hardware, ranked at `level` (None: the series'
    own choice), and what the chart draws of them; empty without a target."""
    series = (
        concurrency_series(target_name=target_name, hardware_slug=hardware_slug, level=level)
        if target_name
        else {"levels": [], "lines": [], "level": None, "ranking": []}
    )
    chart = {
        "levels": series["levels"],
        "lines": [
            {key: line[key] for key in CONCURRENCY_CHART_FIELDS} | {"label": line["short_label"]}
            for line in series["lines"]
        ],
    }
    return {"series": series, "chart": chart}
