"""Every read Specboard's pages and API make: typed functions returning querysets or plain data.

The reads are grouped by what they are about, one module each:

- `board`: the leaderboard's rows, filters and their choices, staleness and the rows a page
  shows; the board's vocabulary (`SOURCES`, `PROTOCOLS`, `RANKED`).
- `ranks`: the orderings (`LEADERBOARD_ORDERINGS`) and each page row's rank in its ranking, as
  `leaderboard.verdicts` decided it (the one verdict layer every read below uses).
- `definitions`: what every number means (the sentences the pages and the API show), a config's
  depths, per-depth speedups over the paired baseline, and the evidence behind a page's rows.
- `charts`: the plain lists behind each chart (runs of a config, acceptance by position, memory
  trade-off, n_max sweep, context depth).
- `board_charts`: the front page's speedup chart and the /hardware/ comparison of GPUs.
- `glance`: the front page's answer at a glance (`fastest_drafts`: per GPU kind and target,
  the fastest draft of every workload where one is faster than none, as the verdicts decide it).
- `compare`: Welch differences and configs side by side (`compare_configs`, the rules the
  compare page and the API share, with its refusals `WrongNumberOfKeys` and `UnknownKeys`).
- `jobs`: a job's status, cost and time left, what the jobs API shows of it, and a user's jobs.
- `queue`: a queued job's position in its hardware's queue and its estimated start.
- `allowance`: what a user may still submit (submissions in the rate's period, tokens a
  day), from `leaderboard.allowances`, the one reading the submission service checks too.
- `hosts`: the GPU hosts serving each hardware kind, online or not, and each kind's queue.
- `estimates`: what the submit form tells before a run: drafts that fit a target, GPU time at
  measured speed, whether a stored config can be run again, and the live estimate's cost of
  what the form holds (`submission_cost`).
- `catalogue`: configs (and their best row's protocol figures), runs and request records, models,
  hardware, targets and engine builds.
- `drafts`: which draft for a target, per GPU kind, by best speedup with ties.
- `draft_rows`: the rows those answers and the glance are decided from, read as values
  (`DraftRow`), each GPU kind's one `Hardware` shared.
- `provenance`: what a run's provenance panel shows, read defensively, with its command ready
  to paste.
- `spread`: how acceptance and tau spread over one run's requests (a histogram, percentiles).
- `energy`: a stored result's energy and roofline (a run's, a config's best run's, a row's).
- `outcomes`: what a finished run says on its job and run pages: its noise verdict
  (`run_noise`, leaderboard.verdicts.noise) and its speedup (`run_speedup`).
- `quality`: the quality protocol's accuracies, their paired difference and the scored tasks.
- `model_requests`: a user's requests for Hugging Face models and their state.
- `pages`: the reads behind the pages that gather several (`board_ranked`, `board_kept_off`,
  `config_page`, `run_page`, `context_page`, `concurrency_page`): what each renders, so its view
  only parses, calls and renders; `run_figures`, a run's figures; `ranked_rows`, the first rows
  of a model's or a GPU kind's selection, ranked.
- `protocols`: the concurrency protocol's per-level figures, verdicts and crossover, and the
  helpers the protocols' reads share; `categories`: per-category figures with intervals over
  prompts and the heatmap.
- `output_length`: per output length each side's decode tok/s, the speedup with its 95%
  interval and verdict (`verdicts.output_length`), the config page's chart data and the API's.

Callers write `from leaderboard import selectors` and `selectors.leaderboard_entries(...)`; every
public read is named here, so they need not know which module holds it. The pages are cached
whole, above the reads (`leaderboard.page_cache`).
"""

from leaderboard.allowances import Allowance, allowance
from leaderboard.selectors.board import (
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
from leaderboard.selectors.board_charts import hardware_comparison_for, speedup_chart
from leaderboard.selectors.catalogue import (
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
    stored_summary,
    target_summaries,
    whole_result,
    whole_results,
)
from leaderboard.selectors.categories import category_heatmap, category_targets, category_view
from leaderboard.selectors.charts import (
    acceptance_by_position,
    config_chart_data,
    context_series,
    has_nmax_sweep,
    memory_tradeoff,
    nmax_choices,
    nmax_sweep,
)
from leaderboard.selectors.compare import (
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
from leaderboard.selectors.definitions import (
    LEGEND,
    TPS_DEFINITIONS,
    depth_speedups,
    row_definitions,
    row_evidence,
)
from leaderboard.selectors.drafts import draft_advice
from leaderboard.selectors.energy import (
    best_run_figures,
    energy_by_run,
    energy_figures,
    energy_of,
    roofline_of,
)
from leaderboard.selectors.estimates import (
    draft_compatibility,
    duration_text,
    gpu_time_estimate,
    measured_speed,
    rerun_source,
    submission_cost,
    submission_models,
    threads_advice,
)
from leaderboard.selectors.hosts import cached_live_workers, host_board
from leaderboard.selectors.jobs import (
    job_by_id,
    job_cost,
    job_engine_seconds,
    job_remaining_seconds,
    job_report,
    job_status,
    job_token_budget,
    user_jobs,
)
from leaderboard.selectors.model_requests import user_model_requests
from leaderboard.selectors.pages import (
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
from leaderboard.selectors.protocols import (
    SEPARATE_PROTOCOLS,
    concurrency_series,
    concurrency_targets,
    concurrency_view,
)
from leaderboard.selectors.quality import QUALITY_DEFINITION, quality_tasks_of, quality_view
from leaderboard.selectors.queue import queue_standing
from leaderboard.selectors.ranks import LEADERBOARD_ORDERINGS, page_ranks
from leaderboard.selectors.spread import acceptance_spread
from leaderboard.verdicts.workloads import depths as protocol_depths

__all__ = [
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
    "stored_summary",
    "whole_result",
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
