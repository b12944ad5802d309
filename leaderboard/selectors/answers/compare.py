"""Comparisons between measurements: by how much two rows differ, and configs side by side.

It owns `welch_difference` and `entry_difference` (a difference of means with its 95% Welch
interval), `comparison` (the two to four configs of the compare page side by side with their
best rows, overlaid chart data and each depth's figures) and `compare_configs`, the one set of
rules that the compare page and the API's compare share.

`compare_configs` takes the requested config keys, as "a,b,c" or as a list. Blank keys and
repeats are dropped; what is left must be two to four keys, each one a known config, or it
raises `WrongNumberOfKeys` or `UnknownKeys`, each with a sentence a person can read and the
unknown keys named. `compare_choices` lists the configs with results as a person reads them
(target, spec type, draft, n_max, workload, hardware, key) for the page's searchable picker, and
`picked_keys` turns what was typed or picked there (a whole label, a key, or any part of one
label) into keys. Otherwise `compare_configs` returns `comparison`'s columns and chart, plus the
difference of each config's best row to the first config's: no difference at all when the two rows
measure tok/s by different definitions or different workloads, no interval when either has fewer
than two requests, and a note when they ran on different hardware. Each surface words its own
errors from these: the page shows the message inline, the API answers 400 or 404.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypedDict

from leaderboard import verdicts
from leaderboard.models import Config, LeaderboardEntry
from leaderboard.selectors.evidence.catalogue import best_entry, config_by_key
from leaderboard.selectors.evidence.charts import _depth_points, acceptance_by_position
from leaderboard.selectors.evidence.definitions import row_definitions, row_evidence


def welch_difference(
    *,
    mean_a: float,
    stdev_a: float | None,
    n_a: int,
    mean_b: float,
    stdev_b: float | None,
    n_b: int,
) -> dict | None:
    """Difference of means a - b with its 95% Welch interval; None when either side has n < 2."""
    if n_a < 2 or n_b < 2 or stdev_a is None or stdev_b is None:
        return None
    var_a, var_b = stdev_a**2 / n_a, stdev_b**2 / n_b
    difference = mean_a - mean_b
    if var_a + var_b == 0:
        return {"difference": difference, "low": difference, "high": difference, "df": None}
    df = (var_a + var_b) ** 2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
    # Welch's degrees of freedom as they are, not rounded down (scipy's t takes any df).
    half = verdicts.t_critical(max(1.0, df)) * math.sqrt(var_a + var_b)
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


def _one_measurement(column: dict) -> bool:
    return column["entry"] is not None and not column["evidence"]["depths"]


def comparison(*, configs: list[Config]) -> dict:
    """Two to four configs side by side: best rows, overlaid chart data, differences to the
    first."""
    entries = [best_entry(config=config) for config in configs]
    evidence = row_evidence(entries=[entry for entry in entries if entry is not None])
    columns = [
        _column(config, entry, evidence.get(entry.pk) if entry else None)
        for config, entry in zip(configs, entries, strict=True)
    ]
    reference = columns[0]["entry"]
    for column in columns:
        column["difference"] = _difference(column["entry"], reference)
    has_depths = any(len(c["depth_points"]) >= 2 for c in columns)
    return {"columns": columns, "chart": _comparison_chart(columns), "has_depths": has_depths}


def _difference(entry: LeaderboardEntry | None, reference: LeaderboardEntry | None) -> dict | None:
    """A compared row's difference to the first one (None for the first, or either missing)."""
    if entry is None or reference is None or entry is reference:
        return None
    return entry_difference(entry=entry, reference=reference)


def _column(config: Config, entry: LeaderboardEntry | None, evidence: dict | None) -> dict:
    """One compared config: its best row and run, the evidence and definitions behind them, its
    acceptance by position and its depth points."""
    run = entry.best_run if entry else None
    return {
        "config": config,
        "entry": entry,
        "run": run,
        "evidence": evidence,
        # (A row always has its evidence: `row_evidence` answers for every row.)
        "definitions": row_definitions(entry, evidence) if entry and evidence is not None else {},
        "acceptance_by_position": acceptance_by_position(run=run),
        "depth_points": _depth_points(run) if run else [],
    }


def _depth_line(column: dict) -> dict:
    """A compared config's tok/s at each depth it measured."""
    points = column["depth_points"]
    return {
        "depths": [p["input_tokens"] for p in points],
        "tokens_per_second": [
            (p.get("decode_tokens_per_second") or {}).get("mean") for p in points
        ],
    }


# The compare chart's series, one list each with a value per compared config.
CHART_SERIES = (
    "labels",
    "tokens_per_second",
    "ci95_low",
    "ci95_high",
    "acceptance_by_position",
    "depths",
)


def _chart_values(column: dict) -> tuple:
    """A compared config's values in each of the chart's series (`CHART_SERIES`)."""
    entry = column["entry"]
    # A depth run's interval pools requests of different lengths: not drawn as one band.
    band = entry if _one_measurement(column) else None
    return (
        column["config"].label,
        entry.tokens_per_second if entry else None,
        band.ci95_low if band else None,
        band.ci95_high if band else None,
        column["acceptance_by_position"],
        _depth_line(column),
    )


def _comparison_chart(columns: list[dict]) -> dict:
    """The compared configs' overlaid chart data: tok/s with intervals, acceptance by position
    and tok/s by depth, one list per series."""
    values = [_chart_values(column) for column in columns]
    return {name: [found[i] for found in values] for i, name in enumerate(CHART_SERIES)}


MIN_KEYS = 2
# A config key's most characters (Config.key): a longer text in the picker is a label's part.
KEY_LENGTH = 16
MAX_KEYS = 4


class ComparisonRefused(Exception):
    """The requested keys cannot be compared; `message` says why in one sentence."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class WrongNumberOfKeys(ComparisonRefused):
    """Fewer than two or more than four distinct keys."""


class UnknownKeys(ComparisonRefused):
    """Keys that name no config; `keys` lists them in the order they were asked for."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__(f"Unknown config keys: {', '.join(keys)}.")
        self.keys = keys


def requested_keys(keys: str | Sequence[str]) -> list[str]:
    """The keys as asked for, without blanks or repeats, in their first order."""
    parts = keys.split(",") if isinstance(keys, str) else keys
    return list(dict.fromkeys(part.strip() for part in parts if part.strip()))


def compare_configs(*, keys: str | Sequence[str]) -> dict:
    """Two to four configs' best rows side by side with their differences to the first one."""
    wanted = requested_keys(keys)
    if not MIN_KEYS <= len(wanted) <= MAX_KEYS:
        raise WrongNumberOfKeys("Give two to four different config keys.")
    configs = {key: config_by_key(key=key) for key in wanted}
    found = {key: config for key, config in configs.items() if config is not None}
    if unknown := [key for key in configs if key not in found]:
        raise UnknownKeys(unknown)
    result = comparison(configs=[found[key] for key in wanted])
    reference = result["columns"][0]
    result["differences"] = []
    for column in result["columns"][1:]:
        item = difference(
            column["entry"],
            reference["entry"],
            key=column["config"].key,
            reference_key=reference["config"].key,
        )
        # The page reads the interval from the column: none where the API gives no difference.
        if item["difference"] is None:
            column["difference"] = None
        column["note"] = item["note"]
        result["differences"].append(item)
    reference["note"] = ""
    return result


class Difference(TypedDict):
    """One config's best row against the reference's (`difference`)."""

    config_key: str
    relative_to: str
    difference: float | None
    ci95_low: float | None
    ci95_high: float | None
    degrees_of_freedom: float | None
    note: str


def difference(
    entry: LeaderboardEntry | None,
    reference: LeaderboardEntry | None,
    *,
    key: str,
    reference_key: str,
) -> Difference:
    """One config's best row against the reference's: mean tok/s difference, 95% Welch, a note."""
    item: Difference = {
        "config_key": key,
        "relative_to": reference_key,
        "difference": None,
        "ci95_low": None,
        "ci95_high": None,
        "degrees_of_freedom": None,
        "note": "",
    }
    if entry is None or reference is None:
        return item | {"note": "no results to compare"}
    if entry.tps_definition != reference.tps_definition:
        return item | {"note": "the two results use different tok/s definitions"}
    if entry.config.workload != reference.config.workload:
        # The verdicts' rule: rows of different workloads are never set against each other.
        return item | {
            "note": f"measured different workloads ({entry.workload_label or entry.config.protocol}"
            f" against {reference.workload_label or reference.config.protocol}): not compared"
        }
    item["difference"] = entry.tokens_per_second - reference.tokens_per_second
    welch = entry_difference(entry=entry, reference=reference)
    if welch is None:
        item["note"] = "fewer than two requests in a batch: no interval"
    else:
        item |= {"ci95_low": welch["low"], "ci95_high": welch["high"]}
        item["degrees_of_freedom"] = welch["df"]
    if entry.hardware_id != reference.hardware_id:
        item["note"] = (item["note"] + "; " if item["note"] else "") + "different hardware"
    return item


def compare_choices() -> list[dict[str, str]]:
    """Every config with a current row, as {"key", "label"}: its label (target, spec type, draft,
    n_max), the workloads and hardware it was measured on, and its key, sorted by label."""
    entries = (
        LeaderboardEntry.objects.filter(retired=False)
        .select_related("config", "hardware")
        .order_by("config__label", "config__key", "hardware__gpu_name")
    )
    found: dict[str, dict] = {}
    for entry in entries:
        config = entry.config
        item = found.setdefault(
            config.key,
            {"key": config.key, "name": config.label, "workloads": [], "hardware": []},
        )
        workload = entry.workload_label or config.protocol
        if workload not in item["workloads"]:
            item["workloads"].append(workload)
        hardware = entry.hardware.label
        if hardware not in item["hardware"]:
            item["hardware"].append(hardware)
    return [
        {
            "key": key,
            "label": " · ".join(
                [item["name"], ", ".join(item["workloads"]), ", ".join(item["hardware"]), key]
            ),
        }
        for key, item in sorted(found.items(), key=lambda pair: (pair[1]["name"], pair[0]))
    ]


def picked_keys(*, picks: Sequence[str], choices: list[dict[str, str]]) -> list[str]:
    """The keys of what was typed in the picker's boxes, blanks dropped: a choice's whole label,
    a config key, or a part of exactly one label (any case). Raises `ComparisonRefused` naming a
    text that matches no config, or several."""
    keys = []
    for typed in (pick.strip() for pick in picks):
        if not typed:
            continue
        exact = [c["key"] for c in choices if typed in (c["label"], c["key"])]
        partial = [c for c in choices if typed.casefold() in c["label"].casefold()]
        if exact:
            keys.append(exact[0])
        elif len(partial) == 1:
            keys.append(partial[0]["key"])
        elif not partial and len(typed) <= KEY_LENGTH and " " not in typed:
            # Perhaps a key of a config without a current row: compare_configs says if not.
            keys.append(typed)
        elif not partial:
            raise ComparisonRefused(f"“{typed}” matches no config with results.")
        else:
            shown = "; ".join(c["label"] for c in partial[:3])
            more = f" and {len(partial) - 3} more" if len(partial) > 3 else ""
            raise ComparisonRefused(
                f"“{typed}” matches {len(partial)} configs ({shown}{more}): "
                "type more of the label or pick one from the list."
            )
    return keys
