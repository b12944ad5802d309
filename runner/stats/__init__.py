"""The statistics of measured requests, by what they are about:

- `summaries`: a sample's n, mean, median, stdev, min, max and the Student-t 95% interval of its
  mean (``summarize``), and the ratio of two figures that may be missing.
- `pooled`: one request's decode rate (``decode_rate``: (predicted_n - 1) tokens over
  predicted_ms, the convention of llama-bench's tg, which the runner measures with and
  ``runner.evidence`` checks and re-derives stored results with), the pooled acceptance rate and
  tau, whether output degenerated (``is_degenerate``), and the figures of a section's summary
  that its request records decide (``pooled_figures``).
- `points`: the points of a protocol, per depth, per concurrency level (with each round's
  aggregate throughput) or per prompt category (``depth_points``).
- `latency`: the latency a serving user weighs (``latency_figures``: time to first token, time per
  output token, inter-token latency and end-to-end latency as p50 / p90 / p99 from per-request
  samples, and the goodput at a TPOT objective), per section and per point.
- `proportions`: the Wilson interval of a share, and the quality protocol's accuracy and its
  paired difference against the baseline (Newcombe's interval, McNemar's exact test).

Callers write `from runner import stats` and `stats.summarize(...)`, or import a name from
`runner.stats`: every public name is re-exported here.
"""

from runner.stats.latency import (
    DEFAULT_TPOT_OBJECTIVE_MS,
    LATENCY_PERCENTILES,
    goodput,
    inter_token_gaps_ms,
    latency_figures,
    latency_percentiles,
    latency_samples,
    percentile,
    percentile_interval,
    request_tpot_ms,
    tpot_ms,
)
from runner.stats.points import (
    LABELLED_POINT_FIELDS,
    OUTPUT_LENGTH_POINT_FIELDS,
    concurrency_figures,
    depth_points,
    round_throughputs,
)
from runner.stats.pooled import (
    DEGENERATE_DISTINCT_RATIO,
    LOOP_MIN_REPEATS,
    LOOP_MIN_SHARE,
    acceptance_and_tau,
    decode_rate,
    first_token_included_rate,
    in_decode_convention,
    is_degenerate,
    is_looping,
    pooled_figures,
)
from runner.stats.proportions import (
    accuracy,
    accuracy_figures,
    mcnemar_exact_p,
    paired_difference,
    paired_difference_interval,
    quality_difference,
    task_pairs,
    wilson_interval,
)
from runner.stats.summaries import ratio, summarize, t_critical_95

__all__ = [
    "DEGENERATE_DISTINCT_RATIO",
    "LOOP_MIN_REPEATS",
    "LOOP_MIN_SHARE",
    "t_critical_95",
    "summarize",
    "decode_rate",
    "first_token_included_rate",
    "in_decode_convention",
    "ratio",
    "acceptance_and_tau",
    "is_looping",
    "is_degenerate",
    "pooled_figures",
    "LABELLED_POINT_FIELDS",
    "OUTPUT_LENGTH_POINT_FIELDS",
    "round_throughputs",
    "concurrency_figures",
    "depth_points",
    "LATENCY_PERCENTILES",
    "DEFAULT_TPOT_OBJECTIVE_MS",
    "percentile",
    "latency_percentiles",
    "request_tpot_ms",
    "tpot_ms",
    "inter_token_gaps_ms",
    "wilson_interval",
    "percentile_interval",
    "goodput",
    "latency_samples",
    "latency_figures",
    "mcnemar_exact_p",
    "paired_difference_interval",
    "accuracy",
    "accuracy_figures",
    "task_pairs",
    "paired_difference",
    "quality_difference",
]
