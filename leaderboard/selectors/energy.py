"""Reads of a stored result's energy and bandwidth-roofline summary, in the API's shape.

It owns what the run and config resources say of energy (``energy``: joules per generated and
per accepted draft token) and of the roofline (``roofline``: the runner's ``Roofline`` fields),
read from ``Run.raw_result``'s summary. A stored result may predate these fields, come from a
CPU host (null there by the runner's rule) or carry anything at all: each figure is a finite,
non-negative number or None, and the roofline is what the runner's own strict model accepts or
None, never an error. The pages' fuller figures (``energy_figures``, ``energy_by_run``) are read here too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import ValidationError

from leaderboard.models import Config, Run
from runner.results import Roofline

ENERGY_FIELDS = ("joules_per_token", "joules_per_accepted_token")


def _figure(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _as_dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _summary(raw_result: object) -> dict:
    summary = raw_result.get("summary") if isinstance(raw_result, dict) else None
    return summary if isinstance(summary, dict) else {}


def energy_of(raw_result: object) -> dict[str, float | None] | None:
    """{joules_per_token, joules_per_accepted_token} of a stored result; None when it has
    neither (a CPU host, or a result from before energy was measured)."""
    summary = _summary(raw_result)
    energy = {name: _figure(summary.get(name)) for name in ENERGY_FIELDS}
    return energy if any(value is not None for value in energy.values()) else None


def roofline_of(raw_result: object) -> dict | None:
    """A stored result's roofline as the runner's model has it, or None (absent or malformed)."""
    value = _summary(raw_result).get("roofline")
    if not isinstance(value, dict):
        return None
    try:
        return Roofline.model_validate(value).model_dump(mode="json")
    except ValidationError:
        return None


def best_run_figures(*, configs: Iterable[Config]) -> dict[int, dict]:
    """{config id: {"energy", "roofline"}} of each config's best run (the highest tok/s in its
    own definition, the earliest on a tie, as the config page picks it), in one query reading
    only the runs' summaries; both None for a config without runs."""
    wanted = {config.pk for config in configs}
    rows = (
        Run.objects.filter(config_id__in=wanted)
        .order_by("created_at", "id")
        # The whole summary, not its keys one by one: SQLite hands a key's string value back
        # parsed as JSON ("1.5" would read as 1.5), an object's values keep their types.
        .values_list(
            "config_id", "tps_definition", "decode_mean", "e2e_mean", "raw_result__summary"
        )
    )
    best: dict[int, tuple[float, dict]] = {}
    for config_id, definition, decode, e2e, summary in rows:
        speed = (decode if definition == Run.Definition.DECODE else e2e) or 0.0
        if config_id not in best or speed > best[config_id][0]:
            best[config_id] = (speed, {"summary": summary})
    empty = {"energy": None, "roofline": None}
    return {
        pk: (
            {"energy": energy_of(best[pk][1]), "roofline": roofline_of(best[pk][1])}
            if pk in best
            else empty
        )
        for pk in wanted
    }


ROOFLINE_FLAGS = {
    "above_ceiling": "above the bandwidth ceiling: impossible for a baseline, a measurement error",
    "far_below": "far below the bandwidth ceiling: likely a CPU fallback",
}


def energy_figures(raw_result: object) -> dict | None:
    """A stored result's energy and roofline figures, each None where it was not measured; None
    when there is none of them (a CPU host, or a result from before energy was measured)."""
    summary = _summary(raw_result)
    roofline = _as_dict(summary.get("roofline"))
    flag = roofline.get("flag")
    flag = flag if isinstance(flag, str) and flag in ROOFLINE_FLAGS else None
    figures = {
        "energy_joules": _figure(summary.get("energy_joules")),
        "joules_per_token": _figure(summary.get("joules_per_token")),
        "joules_per_accepted_token": _figure(summary.get("joules_per_accepted_token")),
        "roofline_fraction": _figure(roofline.get("fraction")),
        "roofline_ceiling_tokens_per_second": _figure(roofline.get("ceiling_tokens_per_second")),
        "peak_bandwidth_bytes_per_second": _figure(roofline.get("peak_bandwidth_bytes_per_second")),
        "bytes_per_token": _figure(roofline.get("bytes_per_token")),
        "roofline_flag": flag,
        "roofline_flag_text": ROOFLINE_FLAGS.get(flag or "", ""),
        "roofline_flag_label": (flag or "").replace("_", " "),
    }
    bandwidth = figures["peak_bandwidth_bytes_per_second"]
    figures["peak_bandwidth_text"] = f"{bandwidth / 1e9:,.0f} GB/s" if bandwidth else ""
    if all(value in (None, "") for value in figures.values()):
        return None
    return figures


ENERGY_KEYS = (
    "joules_per_token",
    "joules_per_accepted_token",
    "roofline_fraction",
    "roofline_flag",
)


def energy_by_run(*, run_ids: Iterable[int | None]) -> dict[int, dict]:
    """The energy and roofline figures of some runs in one query, reading only those keys:
    {run id: {joules_per_token, joules_per_accepted_token, roofline_fraction, roofline_flag}},
    every value None where the run measured none."""
    wanted = {pk for pk in run_ids if pk is not None}
    # The whole summary, as best_run_figures reads it: SQLite hands a key's string value back
    # parsed as JSON.
    rows = Run.objects.filter(pk__in=wanted).values_list("pk", "raw_result__summary")
    found = {}
    for pk, summary in rows:
        figures = energy_figures({"summary": summary})
        found[pk] = {key: (figures or {}).get(key) for key in ENERGY_KEYS}
    empty = dict.fromkeys(ENERGY_KEYS)
    return {pk: found.get(pk, empty) for pk in wanted}
