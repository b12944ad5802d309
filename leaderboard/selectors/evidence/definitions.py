"""What every number on the board means, and the evidence behind each one of a page's rows.

It owns the definition sentences that the pages (title attributes and the legend) and the API
(`definitions` of a leaderboard row) both show, per-depth speedups against the paired baseline
(`runner.pairing.depth_speedups`, geometric mean across depths by
`runner.pairing.combined_speedup`, as the runner computes it), and `row_evidence`: for a page's
rows, in two queries, the draft counts behind acceptance and tau and each depth's mean, interval
and speedup. A config's depths are read by `verdicts.workloads` (`depths`, `is_across_depths`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from leaderboard import verdicts
from leaderboard.models import LeaderboardEntry, Run
from leaderboard.selectors.evidence.energy import ENERGY_KEYS, energy_by_run
from leaderboard.stored_results import stored_results
from leaderboard.verdicts.workloads import is_across_depths
from runner.pairing import combined_speedup, depth_points, depth_speedups

TPS_DEFINITIONS = {
    "decode": (
        "decode tok/s: generated tokens over the server's own generation time, counted as "
        "llama-bench's tg counts: the n - 1 tokens after the first over the time from the first "
        "to the last (llama-server timings), prefill excluded"
    ),
    "end-to-end": (
        "end-to-end tok/s: completion tokens over the client's wall time, prefill and HTTP "
        "included (the seed kit's definition, used by its CSV imports)"
    ),
}
ACCEPTANCE = "acceptance: draft tokens accepted / draft tokens drafted, pooled over the batch"
TAU = "tau: 1 + accepted draft tokens per verify step (target passes), pooled over the batch"
SPEEDUP = (
    "speedup: this row's mean tok/s over its paired baseline row's (same target, context, "
    "protocol, hardware and release; the same tok/s definition)"
)
SPEEDUP_ACROSS_DEPTHS = (
    "speedup of a depth run: at each depth, decode tok/s over the paired baseline's at the "
    "same depth; across depths, the geometric mean of those ratios"
)
CI95 = (
    "95% interval: Student-t confidence interval of the best batch's mean over its requests; "
    "the interval of the figure shown, on every page; ties and comparisons use the config's "
    "estimate instead: a random-effects estimate over its batch means when it ran several "
    "batches (batches differ), else its one batch's requests"
)
CI95_ACROSS_DEPTHS = (
    "95% interval pooled across depths: requests of different input lengths, so not one "
    "measurement; each depth's own interval is listed"
)
N = "n: measured requests in the batch shown (warm-ups excluded)"
BEST_OF_BATCHES = (
    "best of k batches: the row shows the batch with the best average (the seed's rule), "
    "which inflates the mean and narrows the interval; the pooled mean over all k batches, "
    "with its interval, is beside it"
)
STALE = "stale: measured with an engine release older than the newest our workers measured with"
# Energy and the roofline (selectors.evidence.energy shows them beside their numbers).
JOULES_PER_TOKEN = (
    "J/token: NVML's energy counter across the measured requests over their generated tokens; "
    "each request's energy includes its prefill and any idle time within it"
)
JOULES_PER_TOKEN_CONCURRENCY = (
    "J/token of a concurrency run, at its lowest level as all its figures: each wave's energy "
    "(NVML, prefill and idle time included) shared out among its requests by generated tokens, "
    "an allocation rather than a measurement of one request, over the level's generated tokens"
)
ROOFLINE = (
    "roofline: mean decode tok/s over the bandwidth ceiling, peak memory bandwidth x tokens "
    "per step (tau; 1 without drafting) over the bytes one step reads (the target's weights, "
    "the K/V cache at the requests' mean context, the draft's passes)"
)
ROOFLINE_CONCURRENCY = (
    "roofline of a concurrency level: aggregate tok/s over the ceiling of one batched step, "
    "bandwidth x requests in flight x tokens per request per step over the bytes it reads "
    "(the weights once, every request's K/V cache, the draft's passes)"
)
ROOFLINE_CEILING = (
    "bandwidth ceiling: the fastest a step's bytes allow; a term a result cannot give (a K/V "
    "size, a draft's bytes) is left out and said so, which only raises the ceiling"
)
RANKS_WITHIN_DEFINITION = (
    "ranks: within one ranking only (the same workload, tok/s definition, GPU and engine "
    "release), by the sorted column, so a faster row never ranks below a slower one; "
    "'≈ leader' or '≈ row above' where Welch's test on the two configs' samples cannot tell "
    "them apart at 5% (a label, never a rank change), 'no interval' where a side has no spread; "
    "baselines are the denominators of the speedups and are never ranked"
)
# The one tok/s figure of a concurrency or categories row (the runner's summary), and where the
# protocol's own figures are: these rows rank only among rows of their protocol.
PROTOCOL_TPS_DEFINITIONS = {
    "concurrency": (
        "aggregate tok/s of a concurrency row: at its lowest level, all tokens a round generated "
        "over the round's wall time, averaged over its rounds (the rounds are the samples); the "
        "other levels, the crossover and a ranking at any level are on the config page and "
        "/concurrency/"
    ),
    "categories": (
        "decode tok/s of a categories row: each request's generated tokens over the server's own "
        "generation time, pooled over every category's prompts; per category on the config page "
        "and /categories/"
    ),
}
PROTOCOL_SPEEDUP_DEFINITIONS = {
    "concurrency": (
        "speedup of a concurrency row: at its lowest level, aggregate tok/s over the paired "
        "baseline's at the same level, with an interval over the rounds; each level's, and the "
        "crossover with its uncertainty, are on the config page"
    ),
    "categories": (
        "speedup of a categories row: in each category, mean decode tok/s over the paired "
        "baseline's in the same category; across categories, the geometric mean of those ratios "
        "(as the runner's summary has it; each category's is on the config page and /categories/)"
    ),
}


def _term(sentence: str) -> dict[str, str]:
    term, _, text = sentence.partition(": ")
    return {"term": term, "text": text}


# The legend under every board table: each number's definition, one line away.
LEGEND = [
    _term(sentence)
    for sentence in (
        TPS_DEFINITIONS["decode"],
        TPS_DEFINITIONS["end-to-end"],
        N,
        CI95,
        CI95_ACROSS_DEPTHS,
        SPEEDUP,
        SPEEDUP_ACROSS_DEPTHS,
        ACCEPTANCE,
        TAU,
        BEST_OF_BATCHES,
        RANKS_WITHIN_DEFINITION,
        STALE,
        *PROTOCOL_TPS_DEFINITIONS.values(),
        *PROTOCOL_SPEEDUP_DEFINITIONS.values(),
    )
]


def _number(value: object) -> float | None:
    """A stored figure as a finite number, or None for anything else (`verdicts.finite`)."""
    return verdicts.finite(value)


def _decode_stats(point: dict) -> dict:
    stats = point.get("decode_tokens_per_second")
    return stats if isinstance(stats, dict) else {}


def _decode_mean(point: dict) -> float | None:
    return _number(_decode_stats(point).get("mean"))


def _decode_sample(point: dict | None) -> verdicts.Sample | None:
    stats = _decode_stats(point) if point else {}
    return verdicts.summary_sample(stats.get("mean"), stats.get("stdev"), stats.get("n"))


def depth_rows(points: Sequence[dict], baseline_points: Sequence[dict]) -> list[dict]:
    """Each depth's decode mean, n, 95% interval, speedup over the paired baseline with its 95%
    interval (the delta method on the two depths' requests) and the verdicts' word on it against
    no drafting, acceptance."""
    rows = []
    points = depth_points(list(points))
    speedups = depth_speedups(points, baseline_points)
    reference = {
        (p["input_tokens"], p.get("output_tokens")): p for p in depth_points(baseline_points)
    }
    for point, speedup in zip(points, speedups, strict=True):
        stats = _decode_stats(point)
        paired = reference.get((point["input_tokens"], point.get("output_tokens")))
        ratio = verdicts.ratio_interval(_decode_sample(point), _decode_sample(paired))
        n = _number(stats.get("n"))
        # Fewer than two requests at a depth have no interval, as a row's batch has none.
        interval = n is not None and n >= 2
        rows.append(
            {
                "input_tokens": point["input_tokens"],
                "n": int(n) if n is not None else None,
                "mean": _decode_mean(point),
                "ci95_low": _number(stats.get("ci95_low")) if interval else None,
                "ci95_high": _number(stats.get("ci95_high")) if interval else None,
                "speedup": speedup,
                "speedup_ci95_low": ratio[0] if ratio and speedup is not None else None,
                "speedup_ci95_high": ratio[1] if ratio and speedup is not None else None,
                "speedup_verdict": verdicts.against_baseline(ratio, speedup)
                if speedup is not None
                else None,
                "acceptance": _number(point.get("acceptance_rate")),
            }
        )
    return rows


def _run_points(run_ids: Iterable[int | None]) -> dict[int, tuple[list[dict], list[dict]]]:
    """Each run's depth points and its own paired baseline's."""
    return {
        pk: (
            depth_points(stored.stored_points),
            depth_points(stored.baseline.stored_points if stored.baseline else None),
        )
        for pk, stored in stored_results(run_ids).items()
    }


def baseline_run_id(entry: LeaderboardEntry) -> int | None:
    """The baseline batch a row's speedup is measured against (its paired row's best batch on
    rows recorded before the pairing kept its batch)."""
    if entry.baseline_run_id:
        return entry.baseline_run_id
    baseline = entry.baseline_entry if entry.baseline_entry_id else None
    return baseline.best_run_id if baseline is not None else None


def _lowest_level_evidence(entries: Sequence[LeaderboardEntry]) -> dict[int, dict]:
    """A concurrency row's draft counts, baseline tok/s and J/token on the basis of all its
    figures, its lowest level (`verdicts.LOWEST_LEVEL_BASIS`), not pooled over the levels: one
    query for the page's concurrency rows, none without them."""
    if not entries:
        return {}
    wanted = {e.best_run_id for e in entries} | {baseline_run_id(e) for e in entries}
    stored = stored_results(wanted, requests=True)
    found = {}
    for entry in entries:
        own, paired = stored.get(entry.best_run_id or 0), stored.get(baseline_run_id(entry) or 0)
        reference = paired.stored_points if paired else None
        figures = verdicts.lowest_level_figures(
            own.stored_points if own else None, list(own.requests) if own else None, reference
        )
        if figures is None:
            continue
        baseline = verdicts.lowest_level_figures(reference, None)
        drafting = figures.drafting
        found[entry.pk] = {
            "draft_tokens": drafting.drafted if drafting else None,
            "draft_accepted": drafting.accepted if drafting else None,
            "verify_steps": drafting.verify_steps if drafting else None,
            "baseline_tokens_per_second": baseline.sample.mean if baseline else None,
            "joules_per_token": figures.joules_per_token,
        }
    return found


def row_evidence(*, entries: Sequence[LeaderboardEntry]) -> dict[int, dict]:
    """For a page's rows: the best batch's draft counts, the baseline batch's tok/s and, for depth
    rows, every depth's figures against the paired baseline at the same depth.

    Three queries whatever the page's size: the best and baseline batches' counts, the best
    batches' results for their energy and derived roofline (``selectors.evidence.energy``), then
    the depth points of the depth rows' best batches and of their baseline batches.
    """
    counts = _batch_counts(entries)
    # The best batches' energy and roofline, the roofline derived from each result's evidence.
    energies = energy_by_run(run_ids=[entry.best_run_id for entry in entries])
    across = [entry for entry in entries if entry.best_run_id and is_across_depths(entry.config)]
    across_ids = {entry.pk for entry in across}
    points = (
        _run_points([e.best_run_id for e in across] + [baseline_run_id(e) for e in across])
        if across
        else {}
    )
    lowest = _lowest_level_evidence(
        [e for e in entries if e.best_run_id and e.config.protocol == verdicts.CONCURRENCY]
    )
    evidence = {}
    for entry in entries:
        item = _counted(entry, counts)
        # Null, never 0, where the batch measured none (CPU hosts, older results).
        item |= energies.get(entry.best_run_id or 0) or dict.fromkeys(ENERGY_KEYS)
        item |= lowest.get(entry.pk, {})
        if entry.pk in across_ids:
            item |= _across_depths(entry, points)
        evidence[entry.pk] = item
    return evidence


def _batch_counts(entries: Sequence[LeaderboardEntry]) -> dict[int, dict]:
    """The draft counts and tok/s of the rows' best and baseline batches, by run id."""
    wanted = {entry.best_run_id for entry in entries} | {baseline_run_id(e) for e in entries}
    fields = ("pk", "draft_tokens", "draft_accepted", "verify_steps", "decode_mean", "e2e_mean")
    rows = Run.objects.filter(pk__in={pk for pk in wanted if pk is not None}).values(*fields)
    return {row["pk"]: row for row in rows}


def _counted(entry: LeaderboardEntry, counts: dict[int, dict]) -> dict:
    """A row's best batch's draft counts and its baseline batch's tok/s, from the batches'
    columns (`counts`, by run id); no depths yet."""
    count = counts.get(entry.best_run_id or 0, {})
    baseline = counts.get(baseline_run_id(entry) or 0, {})
    return {
        "draft_tokens": count.get("draft_tokens"),
        "draft_accepted": count.get("draft_accepted"),
        "verify_steps": count.get("verify_steps"),
        "baseline_tokens_per_second": baseline.get(
            "decode_mean" if entry.tps_definition == "decode" else "e2e_mean"
        ),
        "depths": [],
        "speedup_across_depths": None,
    }


def _across_depths(entry: LeaderboardEntry, points: dict) -> dict:
    """A depth row's figures at each depth against the paired baseline's at the same depth, and
    their geometric mean."""
    own, paired = points.get(entry.best_run_id, ([], []))
    # The runner's own baseline (the same invocation) first, else the baseline batch's.
    reference = paired or points.get(baseline_run_id(entry), ([], []))[0]
    depths = depth_rows(own, reference)
    return {
        "depths": depths,
        "speedup_across_depths": combined_speedup([d["speedup"] for d in depths]),
    }


def _count(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _ci95_words(entry: LeaderboardEntry, evidence: dict) -> str:
    """A row's interval in words: each depth's, the batch's, or why it has none."""
    if evidence.get("depths"):
        depths = "; ".join(
            f"{d['input_tokens']} tokens: {_interval(d['ci95_low'], d['ci95_high'])} (n {d['n']})"
            for d in evidence["depths"]
        )
        return f"{CI95_ACROSS_DEPTHS}: {depths}"
    if entry.n < 2 or entry.ci95_low is None or entry.ci95_high is None:
        return "95% interval: none, fewer than two requests in the batch (it ties with nothing)"
    return f"{CI95} (n {entry.n})"


def _speedup_words(entry: LeaderboardEntry, evidence: dict) -> str:
    """A row's speedup in words: its definition, the two figures it divides where it is their
    ratio, and the pairing's note."""
    speedup = SPEEDUP_ACROSS_DEPTHS if evidence.get("depths") else SPEEDUP
    speedup = PROTOCOL_SPEEDUP_DEFINITIONS.get(entry.config.protocol, speedup)
    baseline = evidence.get("baseline_tokens_per_second")
    # A concurrency row's speedup is not the ratio of the two rows' tok/s: its sentence says so.
    ratio_of_rows = entry.config.protocol not in PROTOCOL_SPEEDUP_DEFINITIONS
    if ratio_of_rows and entry.speedup is not None and baseline:
        speedup += f": {entry.tokens_per_second:,.2f} over {baseline:,.2f} tok/s"
    elif entry.speedup is None and entry.pairing_note:
        speedup += f"; none here: {entry.pairing_note}"
    if entry.speedup is not None and entry.pairing_note:
        speedup += f"; {entry.pairing_note}"
    return speedup


def row_definitions(entry: LeaderboardEntry, evidence: dict) -> dict[str, str]:
    """Each number of a row with its definition, n and interval, in one line each."""
    definition = PROTOCOL_TPS_DEFINITIONS.get(
        entry.config.protocol, TPS_DEFINITIONS.get(entry.tps_definition, entry.tps_definition)
    )
    concurrency = entry.config.protocol == "concurrency"
    pooled = (
        f"; pooled over all of them: mean {entry.pooled_mean:,.2f} tok/s over "
        f"{entry.pooled_n} requests, 95% interval "
        f"{_interval(entry.pooled_ci95_low, entry.pooled_ci95_high)}"
        if entry.pooled_mean is not None
        else ""
    )
    return {
        "tokens_per_second": f"{definition}; mean of the best batch's {entry.n} requests",
        "ci95": _ci95_words(entry, evidence),
        "n": N,
        "speedup": _speedup_words(entry, evidence),
        "acceptance_rate": (
            f"{ACCEPTANCE}: {_count(evidence.get('draft_accepted'))} of "
            f"{_count(evidence.get('draft_tokens'))} drafted"
        ),
        "tau": (
            f"{TAU}: {_count(evidence.get('draft_accepted'))} accepted over "
            f"{_count(evidence.get('verify_steps'))} verify steps"
        ),
        "runs_count": BEST_OF_BATCHES.replace(
            "of k batches", f"of {_batches(entry.runs_count)}"
        ).replace("all k batches", f"all {_batches(entry.runs_count)}")
        + pooled,
        "joules_per_token": JOULES_PER_TOKEN_CONCURRENCY if concurrency else JOULES_PER_TOKEN,
        "roofline": ROOFLINE_CONCURRENCY if concurrency else ROOFLINE,
    }


def _batches(count: int) -> str:
    return f"{count} batch" if count == 1 else f"{count} batches"


def _interval(low: float | None, high: float | None) -> str:
    return "no interval" if low is None or high is None else f"{low:,.1f} – {high:,.1f}"
