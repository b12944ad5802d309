"""The statistics of measured requests: summaries, pooled acceptance and per-depth points.

This module owns the decode rate of one request (``decode_rate``: (predicted_n - 1) tokens over
predicted_ms, the convention of llama-bench's tg, which the runner measures with and
``runner.evidence`` checks and re-derives stored results with), ``summarize`` (n, mean,
median, stdev, min, max and a Student-t 95% confidence interval of the mean), the pooled acceptance rate and tau of a set of requests, whether output
degenerated (``is_degenerate``, which the service calls on uploaded records too), the figures of
a section's summary that its request records decide, and the points of a protocol: per depth,
per concurrency level (with each round's aggregate throughput: all its generated tokens over its
wall time, the wall time of its slowest request, since a wave's requests are sent together) or
per prompt category; and the latency a serving user weighs (``latency_figures``: time to first
token, time per output token, inter-token latency and end-to-end latency as p50 / p90 / p99 from
per-request samples, and the goodput at a TPOT objective), per section and per point.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from runner.config import (
    BenchmarkConfig,
    CategoriesProtocol,
    ConcurrencyProtocol,
    QualityProtocol,
    QuickProtocol,
)

# A median distinct-4-gram ratio below this marks output that collapsed into repetition.
DEGENERATE_DISTINCT_RATIO = 0.1
# A request whose tail repeats one cycle at least this many times over, across at least this
# share of its generated tokens, is looping: a 150-200 token cycle keeps the distinct 4-gram
# ratio near 0.3, above the ratio's bound, while n-gram drafting accepts it whole.
LOOP_MIN_REPEATS = 3
LOOP_MIN_SHARE = 0.25

# Two-sided 95% critical values of Student's t by degrees of freedom.
_T95 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
    16: 2.120,
    17: 2.110,
    18: 2.101,
    19: 2.093,
    20: 2.086,
    21: 2.080,
    22: 2.074,
    23: 2.069,
    24: 2.064,
    25: 2.060,
    26: 2.056,
    27: 2.052,
    28: 2.048,
    29: 2.045,
    30: 2.042,
    40: 2.021,
    60: 2.000,
    120: 1.980,
}


def t_critical_95(degrees_of_freedom: int) -> float:
    """The two-sided 95% t value; linear in 1/df between tabulated points, 1.96 at infinity."""
    if degrees_of_freedom < 1:
        raise ValueError("degrees of freedom must be at least 1")
    if degrees_of_freedom in _T95:
        return _T95[degrees_of_freedom]
    known = sorted(_T95)
    upper = next((df for df in known if df > degrees_of_freedom), None)
    lower = max(df for df in known if df < degrees_of_freedom)
    upper_value = _T95[upper] if upper else 1.960
    upper_inverse = 1.0 / upper if upper else 0.0
    weight = (1.0 / lower - 1.0 / degrees_of_freedom) / (1.0 / lower - upper_inverse)
    return _T95[lower] + weight * (upper_value - _T95[lower])


def summarize(values: Sequence[float]) -> dict[str, float | int | None]:
    """n, mean, median, stdev, min, max and the 95% confidence interval of the mean.

    Every figure is None for no values. One value has a mean but no spread: its stdev and
    interval are None, not 0.0 and [mean, mean], which would claim a certainty it lacks (files
    written before this carry that zero-width form; ``runner.evidence`` accepts both)."""
    data = [float(v) for v in values]
    n = len(data)
    if n == 0:
        return {
            "n": 0,
            "mean": None,
            "median": None,
            "stdev": None,
            "min": None,
            "max": None,
            "ci95_low": None,
            "ci95_high": None,
        }
    mean = statistics.fmean(data)
    stdev = half_width = None
    if n > 1:
        stdev = statistics.stdev(data)
        half_width = t_critical_95(n - 1) * stdev / math.sqrt(n)
    return {
        "n": n,
        "mean": mean,
        "median": statistics.median(data),
        "stdev": stdev,
        "min": min(data),
        "max": max(data),
        "ci95_low": None if half_width is None else mean - half_width,
        "ci95_high": None if half_width is None else mean + half_width,
    }


def decode_rate(predicted_n: int, predicted_ms: float) -> float | None:
    """Decode tok/s of one request, the project's one definition: the tokens generated after
    the first over the server's generation time, (predicted_n - 1) / predicted_ms.

    The server's clock for ``predicted_ms`` starts when the first token is sampled (that token
    came out of the prompt's own batch, timed in ``prompt_ms``), so the time holds predicted_n - 1
    decode steps: one step per token, as llama-bench's tg times n decode calls for n tokens.
    None where nothing was timed: fewer than two tokens, or no generation time.
    """
    if predicted_n < 2 or predicted_ms <= 0:
        return None
    return (predicted_n - 1) / (predicted_ms / 1000.0)


def first_token_included_rate(predicted_n: int, predicted_ms: float) -> float | None:
    """The runner's decode tok/s before ``decode_rate``: predicted_n / predicted_ms, the first
    token counted over a time that does not hold it. Only to read results written with it."""
    if predicted_ms <= 0:
        return None
    return predicted_n / (predicted_ms / 1000.0)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, or None where either is missing or the denominator is 0."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def acceptance_and_tau(records: Sequence[dict]) -> tuple[float | None, float | None]:
    """Pooled acceptance rate and tau (1 + accepted drafts per verify step) of some requests."""
    draft = sum(r["draft_n"] for r in records)
    accepted = sum(r["draft_n_accepted"] for r in records)
    steps = sum(r["verify_steps"] for r in records)
    # /metrics counts accepted drafts per position; engines without it give the total only.
    metric_accepted = sum(
        sum(r["accepted_per_position"]) if r["accepted_per_position"] else r["draft_n_accepted"]
        for r in records
    )
    return (
        accepted / draft if draft else None,
        1.0 + metric_accepted / steps if steps else None,
    )


def is_looping(record: Mapping[str, Any]) -> bool:
    """Whether one request's output ends in a loop (from its repeat_period and repeated tail)."""
    period = record.get("repeat_period") or 0
    tail = record.get("repeated_tail_tokens") or 0
    generated = record.get("predicted_n") or tail
    return period > 0 and tail >= LOOP_MIN_REPEATS * period and tail >= LOOP_MIN_SHARE * generated


def is_degenerate(records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether measured output degenerated: a request stopped early or looped, or the median
    distinct 4-gram ratio collapsed. Records without the repeating-tail fields (older files)
    are judged by the other two tests."""
    ratios = [record["distinct_4gram_ratio"] for record in records]
    return (
        any(record["stopped_early"] for record in records)
        or any(is_looping(record) for record in records)
        or (bool(ratios) and statistics.median(ratios) < DEGENERATE_DISTINCT_RATIO)
    )


def pooled_figures(records: Sequence[dict]) -> dict[str, Any]:
    """The part of a section's summary that its measured request records alone decide."""
    draft = sum(r["draft_n"] for r in records)
    accepted = sum(r["draft_n_accepted"] for r in records)
    steps = sum(r["verify_steps"] for r in records)
    acceptance_rate, tau = acceptance_and_tau(records)
    positions = max((len(r["accepted_per_position"]) for r in records), default=0)
    per_position = [
        sum(r["accepted_per_position"][i] for r in records if i < len(r["accepted_per_position"]))
        for i in range(positions)
    ]
    return {
        "decode_tokens_per_second": summarize(
            [r["decode_tokens_per_second"] for r in records if r["decode_tokens_per_second"]]
        ),
        "end_to_end_tokens_per_second": summarize(
            [
                r["end_to_end_tokens_per_second"]
                for r in records
                if r["end_to_end_tokens_per_second"]
            ]
        ),
        "ttft_ms": summarize([r["ttft_ms"] for r in records if r["ttft_ms"] is not None]),
        "acceptance_rate": acceptance_rate,
        # tau counts the target's own token: 1 + accepted drafts per verify step.
        "tau": tau,
        "draft_tokens": draft,
        "draft_accepted": accepted,
        "verify_steps": steps,
        # Share of verify steps in which draft position i was accepted.
        "acceptance_by_position": [count / steps for count in per_position] if steps else None,
        "degenerate": is_degenerate(records),
    }


# A point's fields that only a concurrency level or a category fills (None elsewhere).
LABELLED_POINT_FIELDS = ("concurrency", "aggregate_tokens_per_second", "ttft_ms", "category")
# A point's fields that only the output-length protocol fills (runner.output_length): set, and
# null, on every other point, so that the runner's result sets every field it has.
OUTPUT_LENGTH_POINT_FIELDS = ("generated_tokens", "speedup_ci95_low", "speedup_ci95_high")


def round_throughputs(records: Sequence[Mapping[str, Any]]) -> list[float]:
    """Per concurrency round (records grouped by their ``round``): every token the round's
    requests generated over the round's wall time, its slowest request's client wall time."""
    rounds: dict[int, list[Mapping[str, Any]]] = {}
    for record in records:
        rounds.setdefault(record["round"], []).append(record)
    throughputs = []
    for wave in (rounds[index] for index in sorted(rounds)):
        wall_s = max(record["wall_ms"] for record in wave) / 1000.0
        if wall_s > 0:
            throughputs.append(sum(record["predicted_n"] for record in wave) / wall_s)
    return throughputs


def concurrency_figures(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A concurrency level's own figures: aggregate tok/s over its rounds, time to first token."""
    return {
        "aggregate_tokens_per_second": summarize(round_throughputs(records)),
        "ttft_ms": summarize([r["ttft_ms"] for r in records if r["ttft_ms"] is not None]),
    }


def depth_points(config: BenchmarkConfig, records: Sequence[dict]) -> list[dict[str, Any]]:
    """The points of a protocol: per depth (one for the quick protocol), per concurrency level
    or per category; speedup left None."""
    protocol = config.protocol
    if isinstance(protocol, ConcurrencyProtocol | CategoriesProtocol):
        return _labelled_points(protocol, records)
    specs: list[tuple[int, int | None, int]]
    if isinstance(protocol, QuickProtocol):
        specs = [(0, None, protocol.n_predict)]
    elif isinstance(protocol, QualityProtocol):
        # Every task at one point: the tasks' own figure is the accuracy, not a point's.
        specs = [(0, None, protocol.max_tokens)]
    else:
        specs = [(i, p.input_tokens, p.output_tokens) for i, p in enumerate(protocol.points)]
    points = []
    for index, input_tokens, output_tokens in specs:
        mine = [r for r in records if r["point"] == index]
        acceptance_rate, tau = acceptance_and_tau(mine)
        points.append(
            {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "decode_tokens_per_second": summarize(
                    [r["decode_tokens_per_second"] for r in mine if r["decode_tokens_per_second"]]
                ),
                "acceptance_rate": acceptance_rate,
                "tau": tau,
                "speedup": None,
            }
            | dict.fromkeys(LABELLED_POINT_FIELDS)
            | dict.fromkeys(OUTPUT_LENGTH_POINT_FIELDS)
            | {"latency": latency_figures(mine)}
        )
    return points


def _labelled_points(
    protocol: ConcurrencyProtocol | CategoriesProtocol, records: Sequence[dict]
) -> list[dict[str, Any]]:
    points = []
    labels: list[int] | list[str] = (
        protocol.levels if isinstance(protocol, ConcurrencyProtocol) else protocol.categories
    )
    for index, label in enumerate(labels):
        mine = [r for r in records if r["point"] == index]
        acceptance_rate, tau = acceptance_and_tau(mine)
        point: dict[str, Any] = {
            "input_tokens": None,
            "output_tokens": protocol.output_tokens,
            "decode_tokens_per_second": summarize(
                [r["decode_tokens_per_second"] for r in mine if r["decode_tokens_per_second"]]
            ),
            "acceptance_rate": acceptance_rate,
            "tau": tau,
            "speedup": None,
        } | dict.fromkeys(LABELLED_POINT_FIELDS)
        point["latency"] = latency_figures(mine)
        point |= dict.fromkeys(OUTPUT_LENGTH_POINT_FIELDS)
        if isinstance(protocol, ConcurrencyProtocol):
            # Suite prompts are text of their own lengths: no one input length to state.
            length = None if protocol.suite_pool else protocol.input_tokens
            point |= {"input_tokens": length, "concurrency": label}
            point |= concurrency_figures(mine)
        else:
            point["category"] = label
        points.append(point)
    return points


# --- Latency as a serving user sees it --------------------------------------------------------

# The percentiles every latency figure reports (aiperf's and MLPerf's p50 / p90 / p99).
LATENCY_PERCENTILES = (50, 90, 99)
# The goodput objective when none is stated: a request is good when its time per output token
# is at most this (about 20 tok/s per user, a common interactive target).
DEFAULT_TPOT_OBJECTIVE_MS = 50.0
# Two-sided 95% normal quantile for the Wilson interval of a share.
_Z95 = 1.959963984540054


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) of some values, linear between the closest ranks (numpy's
    default, Hyndman and Fan's type 7, what aiperf reports); None for no values."""
    data = sorted(float(v) for v in values)
    if not data:
        return None
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"a percentile is between 0 and 100, not {q}")
    position = (len(data) - 1) * q / 100.0
    below = math.floor(position)
    above = min(below + 1, len(data) - 1)
    weight = position - below
    return data[below] + weight * (data[above] - data[below])


def latency_percentiles(values: Sequence[float]) -> dict[str, float | int | None]:
    """n, mean, p50, p90, p99 and max of some latencies (``percentile``); all None for none."""
    data = [float(v) for v in values]
    figures: dict[str, float | int | None] = {"n": len(data)}
    figures["mean"] = statistics.fmean(data) if data else None
    for q in LATENCY_PERCENTILES:
        figures[f"p{q}"] = percentile(data, q)
    figures["max"] = max(data) if data else None
    return figures


def request_tpot_ms(record: Mapping[str, Any]) -> float | None:
    """Time per output token of one request: (end-to-end latency - time to first token) over the
    tokens after the first, (wall_ms - ttft_ms) / (predicted_n - 1); None without a time to first
    token or with fewer than two tokens."""
    ttft, wall, tokens = record.get("ttft_ms"), record.get("wall_ms"), record.get("predicted_n")
    if ttft is None or wall is None or not tokens or tokens < 2:
        return None
    return max(float(wall) - float(ttft), 0.0) / (tokens - 1)


def inter_token_gaps_ms(record: Mapping[str, Any]) -> list[float]:
    """Inter-token latencies of one streamed request: the gaps between the arrivals of its
    successive content chunks (``chunk_arrival_ms``). With speculative decoding several tokens
    of one verify step arrive together, so many gaps are near 0: a gap is per chunk received,
    not per token decoded. Empty for a request that was not streamed."""
    arrivals = record.get("chunk_arrival_ms") or []
    return [later - earlier for earlier, later in zip(arrivals, arrivals[1:], strict=False)]


def wilson_interval(successes: int, trials: int) -> tuple[float | None, float | None]:
    """The Wilson score 95% interval of a share; (None, None) for no trials."""
    if trials <= 0:
        return None, None
    share = successes / trials
    denominator = 1.0 + _Z95**2 / trials
    centre = (share + _Z95**2 / (2 * trials)) / denominator
    half = _Z95 * math.sqrt(share * (1 - share) / trials + _Z95**2 / (4 * trials**2)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def percentile_interval(values: Sequence[float], q: float) -> tuple[float | None, float | None]:
    """A distribution-free 95% interval of the q-th percentile (0 < q < 100): the order
    statistics x_(l) and x_(u) between which the true percentile lies with probability at
    least 0.95, each tail at most 2.5% (binomial coverage, Conover); (None, None) where the
    sample is too small to reach it (the median needs 6 values, p99 about 370)."""
    data = sorted(float(v) for v in values)
    n, p = len(data), q / 100.0
    if not data or not 0.0 < p < 1.0:
        return None, None
    # Imported here: scipy's import costs more than every other use of this module.
    from scipy.stats import binom

    # X counts the values below the true percentile. Lower rank l: the most with
    # P(X <= l - 1) <= 2.5%; upper rank u: the fewest with P(X <= u - 1) >= 97.5%.
    lower = int(binom.ppf(0.025, n, p))
    if binom.cdf(lower - 1, n, p) > 0.025:
        lower -= 1
    while lower + 1 <= n and binom.cdf(lower, n, p) <= 0.025:
        lower += 1
    upper = max(int(binom.ppf(0.975, n, p)) + 1, 1)
    if lower < 1 or upper > n:
        return None, None
    return data[lower - 1], data[upper - 1]


def goodput(
    records: Sequence[Mapping[str, Any]], *, tpot_ms_objective: float = DEFAULT_TPOT_OBJECTIVE_MS
) -> dict[str, Any]:
    """The share of requests that meet the objective TPOT <= ``tpot_ms_objective`` (aiperf's and
    MLPerf's goodput, as a share of requests), over the requests that have a TPOT, with its
    Wilson 95% interval; the objective travels with the figure."""
    if not math.isfinite(tpot_ms_objective) or tpot_ms_objective <= 0:
        raise ValueError(f"a TPOT objective is a positive number of ms, not {tpot_ms_objective}")
    tpots = [tpot for tpot in (request_tpot_ms(r) for r in records) if tpot is not None]
    met = sum(1 for tpot in tpots if tpot <= tpot_ms_objective)
    low, high = wilson_interval(met, len(tpots))
    return {
        "tpot_ms_objective": float(tpot_ms_objective),
        "requests": len(tpots),
        "met": met,
        "share": met / len(tpots) if tpots else None,
        "ci95_low": low,
        "ci95_high": high,
    }


def latency_samples(records: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """The samples behind each latency figure: per request its time to first token, its time
    per output token (``request_tpot_ms``) and its end-to-end latency (client wall time), and
    every gap between successive streamed chunks (``inter_token_gaps_ms``)."""
    return {
        "ttft_ms": [r["ttft_ms"] for r in records if r.get("ttft_ms") is not None],
        "tpot_ms": [tpot for tpot in (request_tpot_ms(r) for r in records) if tpot is not None],
        "itl_ms": [gap for r in records for gap in inter_token_gaps_ms(r)],
        "e2e_ms": [r["wall_ms"] for r in records if r.get("wall_ms") is not None],
    }


def latency_figures(
    records: Sequence[Mapping[str, Any]], *, tpot_ms_objective: float = DEFAULT_TPOT_OBJECTIVE_MS
) -> dict[str, Any]:
    """The latency a serving user weighs, from some requests: each of ``latency_samples`` as
    ``latency_percentiles``, and the goodput at a TPOT objective (``goodput``)."""
    figures: dict[str, Any] = {
        name: latency_percentiles(values) for name, values in latency_samples(records).items()
    }
    figures["goodput"] = goodput(records, tpot_ms_objective=tpot_ms_objective)
    return figures


# --- The quality protocol: accuracy and its paired difference (runner.quality) -------------


def mcnemar_exact_p(only_first: int, only_second: int) -> float:
    """McNemar's exact two-sided p-value for paired outcomes: under no difference, each of the
    ``only_first + only_second`` discordant pairs falls either way with probability 1/2, so the
    p-value is twice the binomial tail of the smaller count (at most 1)."""
    if only_first < 0 or only_second < 0:
        raise ValueError("discordant counts cannot be negative")
    discordant = only_first + only_second
    smaller = min(only_first, only_second)
    tail = sum(math.comb(discordant, k) for k in range(smaller + 1)) / 2**discordant
    return min(1.0, 2.0 * tail)


def paired_difference_interval(
    both: int, only_first: int, only_second: int, neither: int
) -> tuple[float, float]:
    """Newcombe's 95% interval for the difference of two paired proportions (his method 10,
    "square and add" of each side's Wilson interval, with the continuity-corrected correlation
    phi: Newcombe, Statistics in Medicine 17:2635-2650, 1998), for first minus second.

    ``both``, ``only_first``, ``only_second`` and ``neither`` are the pairs where both sides
    succeeded, only the first, only the second, and neither."""
    counts = (both, only_first, only_second, neither)
    if min(counts) < 0:
        raise ValueError("pair counts cannot be negative")
    pairs = sum(counts)
    if pairs == 0:
        raise ValueError("a difference of proportions needs at least one pair")
    first_yes, second_yes = both + only_first, both + only_second
    first_no, second_no = pairs - first_yes, pairs - second_yes
    p1, p2 = first_yes / pairs, second_yes / pairs
    low1, high1 = wilson_interval(first_yes, pairs)
    low2, high2 = wilson_interval(second_yes, pairs)
    phi = 0.0
    if min(first_yes, first_no, second_yes, second_no) > 0:
        cross = both * neither - only_first * only_second
        # The continuity correction: a positive cross-product is reduced by half the pairs.
        corrected = max(0.0, cross - pairs / 2) if cross > 0 else float(cross)
        phi = corrected / math.sqrt(first_yes * first_no * second_yes * second_no)
    below1, above1 = p1 - float(low1 or 0.0), float(high1 or 0.0) - p1
    below2, above2 = p2 - float(low2 or 0.0), float(high2 or 0.0) - p2
    difference = p1 - p2
    lower = math.sqrt(max(0.0, below1**2 - 2 * phi * below1 * above2 + above2**2))
    upper = math.sqrt(max(0.0, above1**2 - 2 * phi * above1 * below2 + below2**2))
    return max(-1.0, difference - lower), min(1.0, difference + upper)


def accuracy_figures(records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A section's accuracy on the quality protocol's tasks, from its measured records' scores:
    tasks, correct answers, the share correct and its Wilson 95% interval; None where no record
    carries a score."""
    scored = [r["quality"] for r in records if r.get("quality") is not None]
    if not scored:
        return None
    correct = sum(1 for score in scored if score["correct"])
    low, high = wilson_interval(correct, len(scored))
    return {
        "tasks": len(scored),
        "correct": correct,
        "accuracy": correct / len(scored),
        "ci95_low": low,
        "ci95_high": high,
    }


def quality_difference(
    records: Sequence[Mapping[str, Any]], baseline_records: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The config's accuracy minus its paired baseline's on the same tasks (paired by task id):
    the four pair counts, the difference, Newcombe's paired 95% interval
    (``paired_difference_interval``) and McNemar's exact p-value; None without scored pairs."""
    baseline = {
        r["quality"]["task_id"]: r["quality"]["correct"]
        for r in baseline_records
        if r.get("quality") is not None
    }
    pairs = [
        (bool(r["quality"]["correct"]), bool(baseline[r["quality"]["task_id"]]))
        for r in records
        if r.get("quality") is not None and r["quality"]["task_id"] in baseline
    ]
    if not pairs:
        return None
    both = sum(1 for mine, theirs in pairs if mine and theirs)
    only_speculative = sum(1 for mine, theirs in pairs if mine and not theirs)
    only_baseline = sum(1 for mine, theirs in pairs if theirs and not mine)
    neither = len(pairs) - both - only_speculative - only_baseline
    low, high = paired_difference_interval(both, only_speculative, only_baseline, neither)
    return {
        "pairs": len(pairs),
        "both_correct": both,
        "only_speculative_correct": only_speculative,
        "only_baseline_correct": only_baseline,
        "neither_correct": neither,
        "difference": (only_speculative - only_baseline) / len(pairs),
        "ci95_low": low,
        "ci95_high": high,
        "mcnemar_p": mcnemar_exact_p(only_speculative, only_baseline),
    }
