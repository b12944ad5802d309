"""The figures a result's own request records decide, derived again and held against what its
summary and points claim.

Derive, don't trust: a section's summary statistics, draft counts and acceptance rate, and each
depth point's figures, are what ``runner.stats`` computes from the section's measured requests
(``phase: "measure"``, values the runner skips skipped alike), so a figure that disagrees with
its requests beyond float noise is refused. The speedup is derived the same way from a result's
own baseline section, with ``runner.pairing``'s definition; the energy figures from the
requests' ``energy_joules`` (``runner.energy``) and each section's roofline from the result's
engine, host, model and decode speed (``runner.roofline``); the fidelity grade's verdict and
counts from the requests' judged divergences (``runner.fidelity``, records that carry them).

These checks read a result's plain data, as the derivations they share with the site's stored
results do (``runner.stats``, ``runner.energy``, ``runner.roofline``, ``runner.protocols.output_length``);
the typed result (``runner.results.BenchmarkResult.evidence_problem``) calls them beside its own
typed checks: each request against itself (``RequestRecord.problem``), each section's records
against its config and the engine (``Section.records_problem``) and each request's divergences
against the outputs and the margin rule. A result written before the decode convention is
brought into it here too (``in_current_convention``), at the edge where its file is read.

Tau, the acceptance by draft position and the degenerate flag are checked like every other
figure: tau and each position's share within float noise, the flag exactly. Under the
concurrency protocol a wave's verify steps and per-position counts come from one shared
``/metrics`` scrape, shared out among its requests so that every level pools to the wave's exact
counts (``runner.engines.concurrent``): a level's and the summary's tau are measurements and
checked; one request's share is not, and its own ``tau`` is null.

Latency (``runner.stats.latency_figures``): a section's and each point's TTFT, TPOT, inter-token
and end-to-end percentiles and goodput are derived from the measured requests' own clocks and
streamed chunk arrivals, at the TPOT objective the claim states, and a contradicting claim is
refused.

A statistic of one value has no spread. ``runner.stats.summarize`` gives it a null stdev and a
null interval; files written before that carry stdev 0.0 and ci95_low == ci95_high == the mean.
Both forms are accepted for n = 1, each whole (a null stdev with a zero-width interval is
neither), and nothing else: a claimed spread or an interval that is not the mean is refused.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

from runner import protocols, stats
from runner.agreement import ABSOLUTE_TOLERANCE, RELATIVE_TOLERANCE, shown
from runner.config import BenchmarkConfig
from runner.energy import ENERGY_FIGURES, energy_figures, legacy_joules_per_accepted_token
from runner.fidelity import fidelity_grade
from runner.pairing import combined_speedup, crossover_concurrency, point_speed
from runner.protocols import quality
from runner.protocols.output_length import output_length_problem
from runner.roofline import ROOFLINE_FIGURES, derived_roofline, legacy_roofline

# The summary's figures checked against its measured requests (``runner.stats.pooled_figures``).
SUMMARY_FIGURES = (
    "decode_tokens_per_second",
    "end_to_end_tokens_per_second",
    "ttft_ms",
    "draft_tokens",
    "draft_accepted",
    "verify_steps",
    "acceptance_rate",
    "tau",
    "acceptance_by_position",
    "degenerate",
)
# Every point carries its own acceptance rate and tau (``runner.stats.depth_points``).
POINT_FIGURES = ("decode_tokens_per_second", "acceptance_rate", "tau")
# A statistic's figures that one value leaves without a meaning (see the module docstring).
SPREAD_FIGURES = ("stdev", "ci95_low", "ci95_high")
# A concurrency level's own figures, from its requests' rounds (runner.stats.concurrency_figures).
CONCURRENCY_FIGURES = ("aggregate_tokens_per_second", "ttft_ms")


def measured_requests(requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of the measured phase: the only ones a section's figures are computed from."""
    return [record for record in requests if record["phase"] == "measure"]


def _one_value_form(claimed: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    """What a statistic of one value may claim: the derived nulls, or (where the claim gives a
    stdev, as files before the null form do) stdev 0.0 and an interval of exactly the mean."""
    if derived.get("n") != 1 or claimed.get("stdev") is None:
        return derived
    mean = derived["mean"]
    return derived | {"stdev": 0.0, "ci95_low": mean, "ci95_high": mean}


def _disagreement(path: str, claimed: Any, derived: Any) -> str | None:
    """The first figure under path whose claim differs from what the requests give, or None."""
    if isinstance(derived, dict):
        return _figures_disagreement(path, claimed if isinstance(claimed, dict) else {}, derived)
    if isinstance(derived, list) and isinstance(claimed, list) and len(claimed) == len(derived):
        return next(
            (
                found
                for index, (mine, theirs) in enumerate(zip(claimed, derived, strict=True))
                if (found := _disagreement(f"{path}.{index}", mine, theirs))
            ),
            None,
        )
    if _agree(claimed, derived):
        return None
    return f"{path} is {shown(claimed)}, but the section's measured requests give {shown(derived)}"


def _figures_disagreement(
    path: str, claimed: dict[str, Any], derived: dict[str, Any]
) -> str | None:
    """The first of a group of figures (a statistic: in its one-value form where it has one)
    whose claim differs from the derived one."""
    if all(name in derived for name in SPREAD_FIGURES):
        derived = _one_value_form(claimed, derived)
    for name, value in derived.items():
        if found := _disagreement(f"{path}.{name}", claimed.get(name), value):
            return found
    return None


def _agree(claimed: Any, derived: Any) -> bool:
    """Whether one claimed figure is the derived one: counts and nulls exactly, figures computed
    in floating point within float noise; a list never agrees with what it is not."""
    if isinstance(derived, list) or isinstance(claimed, list):
        return False  # One list and one null, or lists of different lengths.
    if claimed is None or derived is None or isinstance(derived, int):
        return bool(claimed == derived)
    return math.isclose(claimed, derived, rel_tol=RELATIVE_TOLERANCE, abs_tol=ABSOLUTE_TOLERANCE)


# --- A result's figures against its records ------------------------------------------------------


def evidence_problem(result: dict[str, Any]) -> str | None:
    """The first claim of a result's plain data (each section's summary and points, then the
    figures of the pair) that the sections' own measured requests contradict, prefixed
    "baseline: " for the baseline's; None if none does. The records against their config and
    the engine are the typed result's own check (``runner.results.Section.records_problem``)."""
    problem = section_evidence_problem(result)
    if problem is None and result.get("baseline") is not None:
        if found := section_evidence_problem(result["baseline"]):
            return f"baseline: {found}"
    return problem or pair_figures_problem(result) or grade_problem(result)


def pair_figures_problem(result: dict[str, Any]) -> str | None:
    """The first figure of the pair that the two sections' data contradict: the speedups, the
    concurrency crossover and the rooflines."""
    return pairing_problem(result) or crossover_problem(result) or roofline_problem(result)


def grade_problem(result: dict[str, Any]) -> str | None:
    """The first of the fidelity grade's counts, the output-length points and the quality
    protocol's scores that the requests contradict (each request's divergences against the
    outputs are the typed result's own check, ``BenchmarkResult``)."""
    return fidelity_problem(result) or output_length_problem(result) or quality_problem(result)


def section_evidence_problem(section: dict[str, Any]) -> str | None:
    """The first claim of a section (summary, points) that its measured requests contradict."""
    records = measured_requests(section["requests"])
    if not records:
        return 'requests: a result needs at least one measured request (phase "measure")'
    return _summary_problem(section["summary"], records) or _points_problem(
        section["points"], records
    )


def _summary_problem(summary: dict[str, Any], records: list[dict[str, Any]]) -> str | None:
    """The summary's pooled, energy and latency figures against the measured requests."""
    derived = stats.pooled_figures(records)
    if derived["decode_tokens_per_second"]["n"] == 0:
        return "requests: no measured request has a decode speed (decode_tokens_per_second)"
    claims = [(name, summary[name], derived[name]) for name in SUMMARY_FIGURES]
    energy = energy_figures(records)
    claims += [(name, summary.get(name), energy[name]) for name in ENERGY_FIGURES]
    # Files written before it was dropped: checked as they defined it, never shown.
    if summary.get("joules_per_accepted_token") is not None:
        legacy = legacy_joules_per_accepted_token(records)
        claims.append(("joules_per_accepted_token", summary["joules_per_accepted_token"], legacy))
    for name, claimed, value in claims:
        if found := _disagreement(f"summary.{name}", claimed, value):
            return found
    return _latency_disagreement("summary.latency", summary.get("latency"), records)


def _points_problem(points: list[dict[str, Any]], records: list[dict[str, Any]]) -> str | None:
    """Each point's figures and labels against its own measured requests."""
    if not points:
        return None  # A section without per-depth points claims no more figures to check.
    by_point: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_point.setdefault(record["point"], []).append(record)
    if (last := max(by_point)) >= len(points):
        return f"requests: a measured request is at point {last}, past the points"
    return next(
        (
            found
            for index, point in enumerate(points)
            if (found := _point_problem(index, point, by_point.get(index, [])))
        ),
        None,
    )


def _point_problem(index: int, point: dict[str, Any], mine: list[dict[str, Any]]) -> str | None:
    """One point's pooled figures, labels, latency and (a concurrency level) aggregate."""
    figures = stats.pooled_figures(mine)
    for name in POINT_FIGURES:
        if found := _disagreement(f"points.{index}.{name}", point[name], figures[name]):
            return found
    if found := _labels_problem(index, point, mine):
        return found
    if found := _latency_disagreement(f"points.{index}.latency", point.get("latency"), mine):
        return found
    if point.get("concurrency") is None:
        return None
    level = stats.concurrency_figures(mine)
    for name in CONCURRENCY_FIGURES:
        if found := _disagreement(f"points.{index}.{name}", point.get(name) or {}, level[name]):
            return found
    return None


def _latency_disagreement(
    path: str, claimed: dict[str, Any] | None, records: list[dict[str, Any]]
) -> str | None:
    """Whether claimed latency percentiles and goodput are what the requests give
    (``runner.stats.latency_figures`` at the claim's own TPOT objective); a result recorded
    before latency was measured claims none, and nothing is checked."""
    if claimed is None:
        return None
    objective = (claimed.get("goodput") or {}).get("tpot_ms_objective")
    if not isinstance(objective, int | float) or not objective > 0:
        return f"{path}.goodput.tpot_ms_objective is {shown(objective)}, not a positive number"
    derived = stats.latency_figures(records, tpot_ms_objective=float(objective))
    return _disagreement(path, claimed, derived)


def derived_speedup(result: dict[str, Any]) -> float | None:
    """A result's speedup from its own sections' measured requests, as the runner defines it (per
    point the ratio of mean decode tok/s, or for a concurrency level of mean aggregate tok/s, to
    the baseline's, across points their geometric mean); None for a result without a baseline
    section."""
    baseline = result.get("baseline")
    if baseline is None:
        return None
    points, baseline_points = (
        stats.depth_points(
            BenchmarkConfig.from_canonical(protocols.stored_canonical(section["config"])),
            measured_requests(section["requests"]),
        )
        for section in (result, baseline)
    )
    return combined_speedup(
        [
            stats.ratio(point_speed(point), point_speed(reference))
            for point, reference in zip(points, baseline_points, strict=True)
        ]
    )


def pairing_problem(result: dict[str, Any]) -> str | None:
    """Whether each point's speedup, the summary's speedup and the baseline's decode mean are
    what the two sections give (``runner.pairing``): with no baseline section, all null."""
    baseline = result.get("baseline")
    points, summary = result["points"], result["summary"]
    derived: list[float | None]
    if baseline is None:
        derived = [None] * len(points)
        baseline_decode = None
    else:
        derived = [
            stats.ratio(point_speed(point), point_speed(reference))
            for point, reference in zip(points, baseline["points"], strict=False)
        ]
        derived += [None] * (len(points) - len(derived))
        baseline_decode = baseline["summary"]["decode_tokens_per_second"]["mean"]
    for index, (point, speedup) in enumerate(zip(points, derived, strict=True)):
        if found := _disagreement(f"points.{index}.speedup", point.get("speedup"), speedup):
            return found.replace("the section's measured requests", "its points and the baseline's")
    # The summary's from the two sections' requests (``derived_speedup``, as the runner pairs
    # them), so that a result whose points are left out cannot carry one either.
    speedup = derived_speedup(result) if "config" in result else combined_speedup(derived)
    checks = (
        ("speedup", speedup),
        ("baseline_decode_tokens_per_second", baseline_decode),
    )
    for name, value in checks:
        if found := _disagreement(f"summary.{name}", summary.get(name), value):
            return found.replace("the section's measured requests", "its points and the baseline's")
    return None


# The fidelity grade's verdict and counts: each request counts by its worst judged divergence.
FIDELITY_COUNTS = (
    "verdict",
    "requests",
    "identical_requests",
    "near_ties",
    "mismatches",
    "unclassified",
)


def fidelity_problem(result: dict[str, Any]) -> str | None:
    """Whether summary.fidelity's verdict and counts are what the requests' judged divergences
    give (``runner.fidelity.fidelity_grade``; only records that carry every divergence: older
    ones were judged at their first divergence only)."""
    claimed = result["summary"].get("fidelity")
    records = measured_requests(result["requests"])
    if claimed is None or any(record.get("divergences") is None for record in records):
        return None
    derived = fidelity_grade(records)
    for name in FIDELITY_COUNTS:
        given, gives = claimed.get(name), getattr(derived, name, None)
        if given != gives:
            return (
                f"summary.fidelity.{name} is {shown(given)}, but the measured requests' "
                f"divergences give {shown(gives)}"
            )
    return None


def roofline_problem(result: dict[str, Any]) -> str | None:
    """The first section whose summary roofline is not what the result's own engine, host,
    models, requests and rates give (``runner.roofline.derived_roofline``); None if none is.

    A roofline in the target-only form of files written before the step was counted (its five
    ``runner.roofline.ROOFLINE_FIGURES`` only) is checked against that form's own derivation
    (``runner.roofline.legacy_roofline``), so those files still load and a figure altered in
    them is still refused; what the site shows is derived afresh either way.
    """
    sections = [("", result)]
    if result.get("baseline") is not None:
        sections.append(("baseline: ", result["baseline"]))
    return next(
        (
            found
            for prefix, section in sections
            if (found := _section_roofline_problem(prefix, section, run=result))
        ),
        None,
    )


def _section_roofline_problem(
    prefix: str, section: dict[str, Any], *, run: dict[str, Any]
) -> str | None:
    claimed = section["summary"].get("roofline")
    derive = legacy_roofline if _legacy_roofline(claimed) else derived_roofline
    derived = derive(section, run=run)
    if claimed is None or derived is None:
        if claimed == derived:
            return None
        given = "null" if claimed is None else "given"
        gives = "null" if derived is None else "one"
        return (
            f"{prefix}summary.roofline is {given}, but the result's engine, host and "
            f"model give {gives}"
        )
    return _roofline_figures_problem(prefix, claimed, derived)


def _legacy_roofline(claimed: Any) -> bool:
    """Whether a claimed roofline is in the old form: its five figures only (the result model
    fills the rest with null)."""
    return isinstance(claimed, dict) and all(
        value is None for name, value in claimed.items() if name not in ROOFLINE_FIGURES
    )


def _roofline_figures_problem(
    prefix: str, claimed: dict[str, Any], derived: dict[str, Any]
) -> str | None:
    for name, value in derived.items():
        path = f"{prefix}summary.roofline.{name}"
        if name == "flag" and claimed.get(name) != value:
            given = shown(claimed.get(name))
            return f"{path} is {given}, but its fraction gives {shown(value)}"
        if name != "flag" and (found := _roofline_disagreement(path, claimed.get(name), value)):
            return found
    return None


def _roofline_disagreement(path: str, claimed: Any, derived: Any) -> str | None:
    """The first roofline figure under path that differs from the derived one: words (rate,
    flag) and nulls exactly, a level list level by level, numbers as ``_disagreement`` has it."""
    if isinstance(derived, list):
        return _levels_disagreement(path, claimed, derived)
    if isinstance(derived, dict):
        claimed = claimed if isinstance(claimed, dict) else {}
        for name, value in derived.items():
            if found := _roofline_disagreement(f"{path}.{name}", claimed.get(name), value):
                return found
        return None
    return _roofline_figure_disagreement(path, claimed, derived)


def _roofline_figure_disagreement(path: str, claimed: Any, derived: Any) -> str | None:
    if isinstance(derived, str) or derived is None or claimed is None:
        if claimed == derived:
            return None
        return f"{path} is {shown(claimed)}, but the result's own data give {shown(derived)}"
    found = _disagreement(path, claimed, derived)
    return (
        found.replace("the section's measured requests", "the result's own data") if found else None
    )


def _levels_disagreement(path: str, claimed: Any, derived: list[Any]) -> str | None:
    """A concurrency section's rooflines level by level."""
    if not isinstance(claimed, list) or len(claimed) != len(derived):
        given = len(claimed) if isinstance(claimed, list) else "none"
        return f"{path} has {given} entries, but the result's own data give {len(derived)}"
    for index, (mine, theirs) in enumerate(zip(claimed, derived, strict=True)):
        if found := _roofline_disagreement(f"{path}.{index}", mine, theirs):
            return found
    return None


# --- The concurrency and categories protocols: each point's labels, the crossover level ----------


def _labels_problem(index: int, point: dict[str, Any], records: list[dict[str, Any]]) -> str | None:
    """Whether a point's requests carry its concurrency level (with their rounds) and category."""
    for name in ("concurrency", "category"):
        if any(record.get(name) != point.get(name) for record in records):
            return (
                f"points.{index}.{name} is {shown(point.get(name))}, but its measured requests "
                f"say {shown(next(r.get(name) for r in records if r.get(name) != point.get(name)))}"
            )
    if point.get("concurrency") is not None and any(r.get("round") is None for r in records):
        return f"requests: a measured request of point {index} (a concurrency level) has no round"
    return None


def _point_records(section: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    by_point: dict[int, list[dict[str, Any]]] = {}
    for record in measured_requests(section["requests"]):
        by_point.setdefault(record["point"], []).append(record)
    return by_point


def crossover_problem(result: dict[str, Any]) -> str | None:
    """Whether summary.crossover_concurrency is what the two sections' requests give: the lowest
    level whose aggregate tok/s is below the baseline's (null without a baseline)."""
    claimed = result["summary"].get("crossover_concurrency")
    derived = None
    if result.get("baseline") is not None:
        mine, theirs = _point_records(result), _point_records(result["baseline"])
        points = result["points"]
        speedups = [
            stats.ratio(
                stats.concurrency_figures(mine.get(i, []))["aggregate_tokens_per_second"]["mean"],
                stats.concurrency_figures(theirs.get(i, []))["aggregate_tokens_per_second"]["mean"],
            )
            if point.get("concurrency") is not None
            else None
            for i, point in enumerate(points)
        ]
        derived = crossover_concurrency(points, speedups)
    if claimed != derived:
        return (
            f"summary.crossover_concurrency is {shown(claimed)}, but the requests of the result "
            f"and its baseline give {shown(derived)}"
        )
    return None


# --- The quality protocol: each answer scored again, the accuracy and its paired difference ------


# A section's accuracy and a result's paired difference (runner.stats), derived from the scores.
QUALITY_FIGURES = ("tasks", "correct", "accuracy", "ci95_low", "ci95_high")
QUALITY_DIFFERENCE_FIGURES = (
    "pairs",
    "both_correct",
    "only_speculative_correct",
    "only_baseline_correct",
    "neither_correct",
    "difference",
    "ci95_low",
    "ci95_high",
    "mcnemar_p",
)


def quality_problem(result: dict[str, Any]) -> str | None:
    """Whether each section's quality scores, its accuracy and the paired difference are what
    the records give: a claimed accuracy that its scores contradict is refused."""
    baseline = result.get("baseline")
    for prefix, section in (("", result), ("baseline: ", baseline)):
        if section is None:
            continue
        problem = _scores_problem(section) or _figures_problem(
            "summary.quality",
            section["summary"].get("quality"),
            stats.accuracy_figures(measured_requests(section["requests"])),
            QUALITY_FIGURES,
        )
        if problem:
            return prefix + problem
    derived = (
        stats.quality_difference(
            measured_requests(result["requests"]), measured_requests(baseline["requests"])
        )
        if baseline is not None
        else None
    )
    return _figures_problem(
        "summary.quality_difference",
        result["summary"].get("quality_difference"),
        derived,
        QUALITY_DIFFERENCE_FIGURES,
    )


def _scores_problem(section: dict[str, Any]) -> str | None:
    """Whether each measured record's quality score is what its task and its output give: the
    task regenerated from the config's protocol (measured request i asks task i), the answer
    extracted from the recorded text again, and scored again (runner.protocols.quality)."""
    records = measured_requests(section["requests"])
    config = section.get("config")
    if not isinstance(config, dict):
        # Part of a result (a check of its figures alone): the tasks cannot be regenerated.
        return None
    protocol = config.get("protocol")
    if not isinstance(protocol, dict) or protocol.get("name") != "quality":
        for position, record in enumerate(records):
            if record.get("quality") is not None:
                return f"requests.{position}.quality: a score, but the protocol is not quality"
        return None
    parsed = BenchmarkConfig.from_canonical(config).protocol
    assert isinstance(parsed, protocols.QualityProtocol)
    expected = quality.tasks(seed=parsed.task_seed, count=parsed.tasks, kinds=parsed.kinds)
    for position, record in enumerate(records):
        if found := _score_problem(position, record.get("quality"), expected):
            return found
    return None


def _score_problem(position: int, score: Any, expected: Sequence[Any]) -> str | None:
    """One measured request's score against its task (measured request i asks task i)."""
    where = f"requests.{position}.quality"
    if score is None:
        return f"{where}: missing; every request of the quality protocol is scored"
    if position >= len(expected):
        return f"{where}: the protocol plans only {len(expected)} tasks"
    derived = quality.score(expected[position], score["output_text"])
    for name in ("task_id", "kind", "expected", "extracted", "correct"):
        if score[name] != derived[name]:
            return (
                f"{where}.{name} is {shown(score[name])}, but the task and its output text "
                f"give {shown(derived[name])}"
            )
    return None


def _figures_problem(path: str, claimed: Any, derived: Any, names: Sequence[str]) -> str | None:
    if claimed is None or derived is None:
        if claimed != derived:
            return f"{path} is {shown(claimed)}, but the scored requests give {shown(derived)}"
        return None
    for name in names:
        given, gives = claimed.get(name), derived[name]
        if not _same_number(given, gives):
            return f"{path}.{name} is {shown(given)}, but the scored requests give {shown(gives)}"
    return None


def _same_number(given: Any, gives: int | float) -> bool:
    """Whether a claimed number is the derived one: a count exactly, a share within noise."""
    if not isinstance(given, int | float) or isinstance(given, bool):
        return False
    if isinstance(gives, int):
        return isinstance(given, int) and given == gives
    return math.isclose(given, gives, rel_tol=RELATIVE_TOLERANCE, abs_tol=ABSOLUTE_TOLERANCE)


# --- Results written before the decode convention ------------------------------------------------


def in_current_convention(result: dict[str, Any]) -> dict[str, Any]:
    """A result's plain data with every request's decode tok/s derived from its own timings by
    ``runner.stats.decode_rate``, and every figure that follows from them derived again (each
    section's summary and points, the speedups, the baseline's decode mean and the rooflines).

    A result the runner wrote with the convention comes back equal; one written before (every
    request's figure the first-token-included rate, checked by the result model first) comes
    back as the runner would measure it now."""
    data = copy.deepcopy(result)
    sections = [data] + ([data["baseline"]] if data.get("baseline") is not None else [])
    for section in sections:
        _decode_in_convention(section)
    if data.get("baseline") is not None:
        _speedups_in_convention(data, data["baseline"])
    for section in sections:
        if section["summary"].get("roofline") is not None:
            section["summary"]["roofline"] = derived_roofline(section, run=data)
    return data


def _decode_in_convention(section: dict[str, Any]) -> None:
    """A section's requests' decode tok/s by ``runner.stats.decode_rate``, and its summary's and
    points' decode statistics from them."""
    for record in section["requests"]:
        record["decode_tokens_per_second"] = stats.decode_rate(
            record["predicted_n"], record["predicted_ms"]
        )
    records = measured_requests(section["requests"])
    decode = "decode_tokens_per_second"
    section["summary"][decode] = stats.pooled_figures(records)[decode]
    for index, point in enumerate(section["points"]):
        mine = [record for record in records if record["point"] == index]
        point[decode] = stats.pooled_figures(mine)[decode]


def _speedups_in_convention(data: dict[str, Any], baseline: dict[str, Any]) -> None:
    """The points' and the summary's speedups and the baseline's decode mean, derived again."""
    speedups = [
        stats.ratio(point_speed(point), point_speed(reference))
        for point, reference in zip(data["points"], baseline["points"], strict=False)
    ]
    for point, speedup in zip(data["points"], speedups, strict=False):
        point["speedup"] = speedup
    data["summary"]["speedup"] = combined_speedup(speedups)
    data["summary"]["baseline_decode_tokens_per_second"] = baseline["summary"][
        "decode_tokens_per_second"
    ]["mean"]


def written_before_the_convention(result: dict[str, Any]) -> bool:
    """Whether any request's decode tok/s is not ``runner.stats.decode_rate`` of its timings."""
    sections = [result] + ([result["baseline"]] if result.get("baseline") is not None else [])
    return not all(
        stats.in_decode_convention(
            record["decode_tokens_per_second"], record["predicted_n"], record["predicted_ms"]
        )
        for section in sections
        for record in section["requests"]
    )
