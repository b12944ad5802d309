"""Configs side by side: the one set of rules that the compare page and the API's compare share.

`compare_configs` takes the requested config keys, as "a,b,c" or as a list. Blank keys and
repeats are dropped; what is left must be two to four keys, each one a known config, or it
raises `WrongNumberOfKeys` or `UnknownKeys`, each with a sentence a person can read and the
unknown keys named. Otherwise it returns `selectors.comparison`'s columns and chart, plus the
difference of each config's best row to the first config's: no difference at all when the two
rows measure tok/s by different definitions, no interval when either has fewer than two
requests, and a note when they ran on different hardware. Each surface words its own errors
from these: the page shows the message inline, the API answers 400 or 404.
"""

from __future__ import annotations

from collections.abc import Sequence

from leaderboard import selectors
from leaderboard.models import LeaderboardEntry

MIN_KEYS = 2
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
    configs = {key: selectors.config_by_key(key=key) for key in wanted}
    if unknown := [key for key, config in configs.items() if config is None]:
        raise UnknownKeys(unknown)
    result = selectors.comparison(configs=[configs[key] for key in wanted])
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


def difference(
    entry: LeaderboardEntry | None,
    reference: LeaderboardEntry | None,
    *,
    key: str,
    reference_key: str,
) -> dict:
    """One config's best row against the reference's: mean tok/s difference, 95% Welch, a note."""
    item = {
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
    welch = selectors.entry_difference(entry=entry, reference=reference)
    if welch is None:
        item["note"] = "fewer than two requests in a batch: no interval"
    else:
        item |= {"ci95_low": welch["low"], "ci95_high": welch["high"]}
        item["degrees_of_freedom"] = welch["df"]
    if entry.hardware_id != reference.hardware_id:
        item["note"] = (item["note"] + "; " if item["note"] else "") + "different hardware"
    return item
