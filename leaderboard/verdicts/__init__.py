"""The verdicts: the one place that decides what is comparable, valid and better.

Every page, chart, export and API resource reads its answers from here (through the rows the
services maintain with it when a run is recorded, or by calling it on stored figures), so no two
pages can disagree on a rank, a tie, the best run or a piece of advice. Plain rules over model
instances and stored figures: nothing here writes, and it imports neither services nor selectors,
so both may use it.

- `statistics`: finite stored numbers, Student-t intervals, Welch's test, the interval of a
  ratio, a random-effects estimate over batch means and a proportion's Wilson interval
  (scipy.stats).
- `workloads`: what a row measured and which rows it may be compared with (`ranking_key`: the
  same workload, tok/s definition, hardware kind and engine release), in words.
- `best_run`: the one rule that picks a config's best batch (clean by the row's noise rules), a
  run's ranking figure (aggregate tok/s at the lowest level for concurrency), and the spread
  rule.
- `uncertainty`: one interval per figure: the config's estimate (random effects over its batch
  means, or one batch's requests) that ties are decided on, and the interval of the speedup
  shown, with what each is over.
- `evidence`: whether a speculative figure rests on too few verify steps or drafted tokens to
  be more than an anecdote (then it is shown as one and never crowned).
- `noise`: whether a batch is noisy (an outlier request, an interval reaching 0, a wide spread),
  why in words with the re-run advice, and the few-verify-steps note beside a tau.
- `ranking`: competition ranks by the point estimate and "indistinguishable from the leader /
  the row above" labels.
- `concurrency`: per-level verdicts against the baseline and the crossover as a level interval.
- `categories`: per-category intervals over prompts, anecdotal below three.
- `baselines`: whether a result's own baseline disagrees with the site's measurements of it
  beyond their intervals (then the row is kept off every ranking until they agree).
- `fidelity`: lossless and the fidelity badge of a run or a row, decided together from the
  outputs (never a file's claim); "near ties only" only where the margin threshold was measured.
- `quality`: whether a draft changed the answers: the quality protocol's paired accuracy
  difference read by its interval ("fewer correct", "more correct", "no change shown").
- `output_length`: per output length the speedup over the paired baseline, its 95% interval (the
  runner's rule, checked at the door) and "faster" / "slower" / "not established".
- `series`: what a curve holds fixed (every parameter but the one it varies) and the words
  that tell two configs apart ("-t 1", "-ctk q8_0").
- `rows`: every figure of one leaderboard row, decided from what the service read of it
  (`row_figures`), which `services.board` writes as it is.
- `advice`: which draft for a target, which config fits a GPU, which n_max wins, and the front
  page's first answer per GPU kind and target (every workload where a draft is faster).
"""

from leaderboard.verdicts import categories, evidence
from leaderboard.verdicts.advice import (
    UNTESTED,
    DraftStanding,
    DraftTable,
    FirstAnswer,
    FitAnswer,
    WorkloadLead,
    against_baseline,
    answer_order,
    answer_workloads,
    best_n_max,
    clearly_faster,
    crownable,
    draft_tables,
    first_answer,
    fitting_answers,
    is_faster_than_none,
    leading_speedup,
    speedup_interval,
    tied,
    untested_reason,
)
from leaderboard.verdicts.baselines import baseline_dispute
from leaderboard.verdicts.best_run import (
    CONCURRENCY,
    aggregate_sample,
    best_run,
    is_noisy,
    level_points,
    lowest_level,
    lowest_level_pair,
    run_sample,
)
from leaderboard.verdicts.concurrency import (
    FASTER,
    LOWEST_LEVEL_BASIS,
    NOT_ESTABLISHED,
    SLOWER,
    LevelAcceptance,
    LowestLevel,
    crossover_of,
    crossover_text,
    level_acceptance,
    level_verdicts,
    lowest_level_figures,
)
from leaderboard.verdicts.evidence import (
    MIN_DRAFTED_TOKENS,
    MIN_VERIFY_STEPS,
    Evidence,
    anecdotal,
    evidence_of,
    row_note,
)
from leaderboard.verdicts.fidelity import (
    FIDELITY_ORDER,
    Outputs,
    graded_fidelity,
    outputs_verdict,
)
from leaderboard.verdicts.quality import (
    FEWER_CORRECT,
    MORE_CORRECT,
    NO_CHANGE_SHOWN,
    quality_change,
)
from leaderboard.verdicts.ranking import (
    KEPT_OFF_FLAGS,
    Contender,
    Standing,
    competes,
    competes_as,
    standing_columns,
    standings,
)
from leaderboard.verdicts.series import held_fixed, option_words, series_label
from leaderboard.verdicts.statistics import (
    Sample,
    SampleColumns,
    finite,
    indistinguishable,
    random_effects,
    ratio_interval,
    ratios_indistinguishable,
    summary_sample,
    t_critical,
    t_interval,
    welch_p,
    wilson_interval,
)
from leaderboard.verdicts.uncertainty import (
    BATCH_MEANS,
    BATCH_SPEEDUPS,
    REQUESTS,
    ROUNDS,
    Uncertainty,
    config_uncertainty,
    speedup_uncertainty,
)
from leaderboard.verdicts.uncertainty import (
    NONE as NO_UNCERTAINTY,
)
from leaderboard.verdicts.workloads import (
    SEED_CSV_PROTOCOL,
    TEXT_PROMPT,
    TOKEN_ID_PROMPTS,
    canonical_protocol,
    is_across_depths,
    is_across_lengths,
    learns_across_requests,
    prompt_set,
    prompt_suite,
    prompts_unknown,
    ranking_key,
    ranking_label,
    repeats_a_prompt,
    workload_label,
)

__all__ = [
    "categories",
    "evidence",
    "MIN_DRAFTED_TOKENS",
    "MIN_VERIFY_STEPS",
    "Evidence",
    "anecdotal",
    "evidence_of",
    "row_note",
    "random_effects",
    "wilson_interval",
    "UNTESTED",
    "FASTER",
    "NOT_ESTABLISHED",
    "SLOWER",
    "t_critical",
    "KEPT_OFF_FLAGS",
    "DraftStanding",
    "DraftTable",
    "FirstAnswer",
    "FitAnswer",
    "WorkloadLead",
    "against_baseline",
    "answer_order",
    "answer_workloads",
    "crownable",
    "first_answer",
    "is_faster_than_none",
    "leading_speedup",
    "best_n_max",
    "clearly_faster",
    "draft_tables",
    "fitting_answers",
    "speedup_interval",
    "tied",
    "crownable",
    "untested_reason",
    "BATCH_MEANS",
    "BATCH_SPEEDUPS",
    "CONCURRENCY",
    "Contender",
    "NO_UNCERTAINTY",
    "REQUESTS",
    "ROUNDS",
    "SEED_CSV_PROTOCOL",
    "Sample",
    "Standing",
    "Uncertainty",
    "aggregate_sample",
    "best_run",
    "canonical_protocol",
    "competes",
    "config_uncertainty",
    "crossover_of",
    "crossover_text",
    "finite",
    "indistinguishable",
    "is_across_depths",
    "is_across_lengths",
    "is_noisy",
    "learns_across_requests",
    "level_points",
    "level_acceptance",
    "level_verdicts",
    "LevelAcceptance",
    "lowest_level",
    "lowest_level_pair",
    "prompt_suite",
    "ranking_key",
    "ranking_label",
    "ratio_interval",
    "ratios_indistinguishable",
    "repeats_a_prompt",
    "run_sample",
    "speedup_uncertainty",
    "standings",
    "standing_columns",
    "competes_as",
    "SampleColumns",
    "summary_sample",
    "t_interval",
    "welch_p",
    "workload_label",
    "FEWER_CORRECT",
    "MORE_CORRECT",
    "NO_CHANGE_SHOWN",
    "quality_change",
    "baseline_dispute",
    "FIDELITY_ORDER",
    "Outputs",
    "graded_fidelity",
    "outputs_verdict",
    "held_fixed",
    "option_words",
    "series_label",
    "TEXT_PROMPT",
    "TOKEN_ID_PROMPTS",
    "prompt_set",
    "prompts_unknown",
    "LOWEST_LEVEL_BASIS",
    "LowestLevel",
    "lowest_level_figures",
]
