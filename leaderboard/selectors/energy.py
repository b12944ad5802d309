"""Reads of a stored result's energy and bandwidth-roofline summary, in the API's shape.

It owns what the run and config resources say of energy (``energy``: joules per generated and
per accepted draft token) and of the roofline (``roofline``: the runner's ``Roofline`` fields),
read from ``Run.raw_result``'s summary. A stored result may predate these fields, come from a
CPU host (null there by the runner's rule) or carry anything at all: each figure is a finite,
non-negative number or None, and the roofline is what the runner's own strict model accepts or
None, never an error. The pages' fuller figures are ``selectors.protocols.energy_figures``.
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
