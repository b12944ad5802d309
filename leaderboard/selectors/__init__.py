"""Every read Specboard's pages and API make: typed functions returning querysets or plain data.

The reads are grouped by the family of pages they serve, one package each (each package's
docstring names its modules):

- `board`: the front page and /hardware/: the leaderboard's rows, filters and vocabulary
  (`rows`: `SOURCES`, `PROTOCOLS`, `RANKED`), each row's rank as `leaderboard.verdicts` decided
  it (`ranks`, `LEADERBOARD_ORDERINGS`), the speedup and GPU comparison charts (`charts`) and
  the answer at a glance (`glance`: per GPU kind and target, the fastest draft of every
  workload where one is faster than none).
- `answers`: the answer pages: which draft for a target by best speedup with ties (`drafts`),
  the rows those answers and the glance are decided from, read as values (`draft_rows`),
  latency and throughput by concurrency level (`serving`), and configs side by side with Welch
  differences (`compare`, with its refusals `WrongNumberOfKeys` and `UnknownKeys`).
- `evidence`: the config and run pages: what every number means and the evidence behind a
  page's rows (`definitions`), the chart data (`charts`), the protocols' figures
  (`protocols`: concurrency levels and crossover; `categories`; `output_length`; `quality`),
  energy and roofline (`energy`), the spread over a run's requests (`spread`), the provenance
  panel (`provenance`), a run's noise verdict and speedup (`outcomes`), and the catalogue of
  configs, runs, request records, models, hardware and builds (`catalogue`).
- `jobs`: submitting and following work: a job's status, cost and time left (`status`), a
  queued job's position and estimated start (`queue`), the GPU hosts of each kind (`hosts`),
  what the submit form tells before a run (`estimates`) and a user's model requests
  (`model_requests`).
- `pages`: the reads behind the pages that gather several families (`board_ranked`,
  `board_kept_off`, `config_page`, `run_page`, `context_page`, `concurrency_page`), so each view
  only parses, calls and renders.
- `allowance`: what a user may still submit, from `leaderboard.allowances`, the one reading the
  submission service checks too.

Callers write `from leaderboard import selectors` and `selectors.leaderboard_entries(...)`; every
public read is named here, so they need not know which module holds it. The pages are cached
whole, above the reads (`leaderboard.web.page_cache`).
"""

from leaderboard.allowances import Allowance, allowance
from leaderboard.selectors.answers.compare import (
    ComparisonRefused,
    UnknownKeys,
    WrongNumberOfKeys,
    compare_choices,
    compare_configs,
    comparison,
    entry_difference,
    picked_keys,
    requested_keys,
    welch_difference,
)
from leaderboard.selectors.answers.drafts import draft_advice
from leaderboard.selectors.board.charts import hardware_comparison_for, speedup_chart
from leaderboard.selectors.board.ranks import LEADERBOARD_ORDERINGS, page_ranks
from leaderboard.selectors.board.rows import (
    PROTOCOLS,
    RANKED,
    SOURCES,
    baseline_rows,
    best_config_for,
    is_stale,
    leaderboard_entries,
    leaderboard_filter_choices,
    leaderboard_from_runs,
    leaderboard_rows,
    newest_release_number,
    release_number,
    spec_type_q,
    with_baseline_configs,
)
from leaderboard.selectors.evidence.catalogue import (
    REQUEST_EXPORT_FIELDS,
    best_entry,
    config_by_key,
    config_entries,
    config_protocol_figures,
    config_runs,
    engine_builds,
    hardware_by_slug,
    hardware_summaries,
    point_labels,
    registered_models,
    request_records,
    request_records_page,
    run_by_id,
    servable_hardware,
    target_summaries,
    whole_results,
)
from leaderboard.selectors.evidence.categories import (
    category_heatmap,
    category_targets,
    category_view,
)
from leaderboard.selectors.evidence.charts import (
    acceptance_by_position,
    config_chart_data,
    context_series,
    has_nmax_sweep,
    memory_tradeoff,
    nmax_choices,
    nmax_sweep,
)
from leaderboard.selectors.evidence.definitions import (
    LEGEND,
    TPS_DEFINITIONS,
    depth_speedups,
    row_definitions,
    row_evidence,
)
from leaderboard.selectors.evidence.energy import (
    best_run_figures,
    energy_by_run,
    energy_figures,
    energy_of,
    roofline_of,
)
from leaderboard.selectors.evidence.protocols import (
    SEPARATE_PROTOCOLS,
    concurrency_series,
    concurrency_targets,
    concurrency_view,
)
from leaderboard.selectors.evidence.quality import (
    QUALITY_DEFINITION,
    quality_tasks_of,
    quality_view,
)
from leaderboard.selectors.evidence.spread import acceptance_spread
from leaderboard.selectors.jobs.estimates import (
    SubmitOffer,
    draft_compatibility,
    duration_text,
    gpu_time_estimate,
    measured_speed,
    rerun_source,
    submission_cost,
    submission_models,
    submit_offer,
    threads_advice,
)
from leaderboard.selectors.jobs.hosts import cached_live_workers, host_board
from leaderboard.selectors.jobs.model_requests import user_model_requests
from leaderboard.selectors.jobs.queue import queue_standing
from leaderboard.selectors.jobs.status import (
    job_by_id,
    job_cost,
    job_engine_seconds,
    job_remaining_seconds,
    job_report,
    job_status,
    job_token_budget,
    user_jobs,
)
from leaderboard.selectors.pages import (
    RowSetPaginator,
    board_kept_off,
    board_page_number,
    board_ranked,
    board_selection,
    concurrency_page,
    config_page,
    context_page,
    ranked_rows,
    run_figures,
    run_page,
)
from leaderboard.verdicts.workloads import depths as protocol_depths

__all__ = [
    "RowSetPaginator",
    "Allowance",
    "allowance",
    "ComparisonRefused",
    "LEADERBOARD_ORDERINGS",
    "LEGEND",
    "PROTOCOLS",
    "RANKED",
    "REQUEST_EXPORT_FIELDS",
    "SEPARATE_PROTOCOLS",
    "SOURCES",
    "TPS_DEFINITIONS",
    "UnknownKeys",
    "WrongNumberOfKeys",
    "acceptance_by_position",
    "acceptance_spread",
    "baseline_rows",
    "best_config_for",
    "best_entry",
    "best_run_figures",
    "board_kept_off",
    "board_page_number",
    "board_ranked",
    "board_selection",
    "cached_live_workers",
    "category_heatmap",
    "category_targets",
    "category_view",
    "compare_choices",
    "compare_configs",
    "comparison",
    "concurrency_page",
    "concurrency_series",
    "concurrency_targets",
    "concurrency_view",
    "config_by_key",
    "config_chart_data",
    "config_entries",
    "config_page",
    "config_protocol_figures",
    "config_runs",
    "context_page",
    "context_series",
    "depth_speedups",
    "draft_advice",
    "draft_compatibility",
    "duration_text",
    "energy_by_run",
    "energy_figures",
    "energy_of",
    "engine_builds",
    "entry_difference",
    "gpu_time_estimate",
    "SubmitOffer",
    "submit_offer",
    "threads_advice",
    "hardware_by_slug",
    "hardware_comparison_for",
    "hardware_summaries",
    "host_board",
    "QUALITY_DEFINITION",
    "quality_tasks_of",
    "quality_view",
    "is_stale",
    "job_by_id",
    "job_cost",
    "job_engine_seconds",
    "job_remaining_seconds",
    "job_report",
    "job_status",
    "job_token_budget",
    "leaderboard_entries",
    "leaderboard_filter_choices",
    "leaderboard_from_runs",
    "leaderboard_rows",
    "measured_speed",
    "memory_tradeoff",
    "newest_release_number",
    "has_nmax_sweep",
    "nmax_choices",
    "nmax_sweep",
    "page_ranks",
    "point_labels",
    "protocol_depths",
    "queue_standing",
    "ranked_rows",
    "registered_models",
    "release_number",
    "request_records",
    "request_records_page",
    "picked_keys",
    "requested_keys",
    "rerun_source",
    "roofline_of",
    "row_definitions",
    "row_evidence",
    "run_by_id",
    "whole_results",
    "run_figures",
    "run_page",
    "servable_hardware",
    "spec_type_q",
    "with_baseline_configs",
    "speedup_chart",
    "submission_cost",
    "submission_models",
    "target_summaries",
    "user_jobs",
    "user_model_requests",
    "welch_difference",
]
