"""Reads of a stored result's energy and bandwidth-roofline figures, in the API's shape.

It owns what the run and config resources say of energy (``energy``: joules per generated
token) and of the roofline (``roofline``: the runner's ``Roofline`` fields), and the pages'
fuller figures (``energy_figures``; ``run_energy_figures`` and ``energy_by_run`` for stored
runs, computed once per change of the board), with the definition sentences
(``selectors.evidence.definitions``) beside them.

Energy is read from a stored result's summary (``leaderboard.stored_results``), which the door
checked against the requests' energy. There is no energy of an accepted draft token:
``joules_per_accepted_token`` (the whole energy over accepted draft tokens, in results written
before it was dropped) is never shown; the API keeps the key, always null. The roofline is never
read as stored: it is derived again from the result's own engine, host, models, requests and rates
(``runner.roofline.derived_roofline``: the bytes one step reads, target, K/V cache and draft, and
the tokens it yields; a concurrency level's aggregate against one batched step for all its
streams), so a stored figure computed the old way (the target's weights alone) or not at all shows
as the result's evidence gives it. A stored result may come from a CPU host (null there by the
runner's rule) or carry anything at all: each figure is a finite, non-negative number or None,
never an error.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from django.core.cache import cache
from pydantic import ValidationError

from leaderboard import verdicts
from leaderboard.models import Config, LeaderboardEntry
from leaderboard.selectors.evidence.quality import quality_view
from leaderboard.stored_results import StoredResult, whole_stored_results
from runner.results import Roofline
from runner.roofline import derived_roofline

# The API's energy object; joules_per_accepted_token stays, null, so clients do not break.
ENERGY_FIELDS = ("joules_per_token", "joules_per_accepted_token")


def _figure(value: object) -> float | None:
    """A stored energy or roofline figure: finite (`verdicts.finite`) and not negative."""
    number = verdicts.finite(value)
    return number if number is not None and number >= 0 else None


def _joules_per_token(stored: StoredResult) -> float | None:
    """A stored result's J/token: its summary's, but a concurrency result's at its lowest level,
    the basis of all its figures (`verdicts.LOWEST_LEVEL_BASIS`), from that level's requests."""
    if verdicts.level_points(stored.stored_points):
        lowest = verdicts.lowest_level_figures(stored.stored_points, list(stored.requests))
        return _figure(lowest.joules_per_token) if lowest else None
    return _figure(stored.joules_per_token)


def energy_of(stored: StoredResult) -> dict[str, float | None] | None:
    """{joules_per_token, joules_per_accepted_token (always None)} of a stored result, its
    requests with it (a concurrency result's lowest level is read from them); None when it has
    no energy (a CPU host, or a result from before energy was measured)."""
    joules = _joules_per_token(stored)
    if joules is None:
        return None
    return {"joules_per_token": joules, "joules_per_accepted_token": None}


def roofline_of(whole: object) -> dict | None:
    """A whole stored result's roofline derived from its own evidence, as the runner's model has
    it, or None (a CPU host, a missing input, or a stored result of any other shape)."""
    if not isinstance(whole, dict):
        return None
    try:
        # The runner's derivation reads a result file's JSON, its requests in it.
        derived = derived_roofline(whole, run=whole)
        if derived is None:
            return None
        return Roofline.model_validate(derived).model_dump(mode="json")
    except (ValidationError, KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError):
        # Whatever a damaged stored result holds is no roofline, never an error.
        return None


def best_run_figures(*, configs: Iterable[Config]) -> dict[int, dict]:
    """{config id: {"energy", "roofline", "quality"}} of each config's best run: the one its best
    row stores (the verdicts' one rule, `verdicts.best_run`; the row `selectors.best_entry` picks),
    so the API's figures are the config page's; both None for a config without a row."""
    wanted = {config.pk for config in configs}
    rows = (
        LeaderboardEntry.objects.filter(config_id__in=wanted, best_run__isnull=False)
        .order_by("config_id", "retired", "-tokens_per_second", "id")
        .values_list("config_id", "best_run_id")
    )
    best: dict[int, int] = {}
    for config_id, run_id in rows:
        best.setdefault(config_id, run_id)
    results = whole_stored_results(best.values())
    figures = {}
    for pk in wanted:
        whole = results.get(best[pk]) if pk in best else None
        stored = StoredResult.of_file(whole)
        figures[pk] = {
            "energy": energy_of(stored),
            # The runner's derivation reads the whole file, not the view.
            "roofline": roofline_of(whole),
            "quality": quality_view(stored),
        }
    return figures


ROOFLINE_FLAGS = {
    "above_ceiling": "above the bandwidth ceiling: impossible, a measurement error",
    "far_below": "far below the bandwidth ceiling: likely a CPU fallback",
}


def _bytes_text(value: object) -> str:
    return f"{value / 1e9:,.2f} GB" if isinstance(value, int | float) else "not counted"


def _step_text(roofline: Mapping[str, Any]) -> str:
    """The bytes one step reads, term by term, and the tokens it yields, in words."""
    kv, draft = roofline.get("kv_bytes_per_step"), roofline.get("draft_bytes_per_step")
    streams = roofline.get("streams") or 1
    parts = [f"target weights {_bytes_text(roofline.get('target_weight_bytes'))}"]
    context = roofline.get("context_tokens")
    at = f" at {context:,.0f} tokens of context" if isinstance(context, int | float) else ""
    cache = "K/V cache" if streams == 1 else f"K/V cache of {streams} requests"
    parts.append(
        f"{cache} {_bytes_text(kv)}{at}"
        if kv is not None
        else f"{cache} not counted (this result's model metadata gives no K/V size)"
    )
    if draft is None:
        parts.append("draft not counted (its bytes are unknown)")
    elif draft:
        parts.append(f"draft {_bytes_text(draft)}")
    tokens = roofline.get("tokens_per_step") or 1.0
    yields = f"{tokens:.2f} tokens" + (" per request" if streams > 1 else "")
    return f"{_bytes_text(roofline.get('bytes_per_step'))} a step ({', '.join(parts)}) for {yields}"


def energy_figures(whole: object) -> dict | None:
    """A whole stored result's energy and (derived) roofline figures, each None where it was not
    measured, with their definition sentences; None when there is none of them (a CPU host, or
    a result from before energy was measured)."""
    stored = StoredResult.of_file(whole)
    roofline = roofline_of(whole) or {}
    flag = roofline.get("flag")
    flag = flag if isinstance(flag, str) and flag in ROOFLINE_FLAGS else None
    levels = _roofline_levels(roofline)
    figures: dict[str, Any] = {
        "energy_joules": _figure(stored.energy_joules),
        "joules_per_token": _joules_per_token(stored),
        "roofline_fraction": _figure(roofline.get("fraction")),
        "roofline_ceiling_tokens_per_second": _figure(roofline.get("ceiling_tokens_per_second")),
        "peak_bandwidth_bytes_per_second": _figure(roofline.get("peak_bandwidth_bytes_per_second")),
        "bytes_per_token": _figure(roofline.get("bytes_per_token")),
        "bytes_per_step": _figure(roofline.get("bytes_per_step")),
        "roofline_flag": flag,
        "roofline_flag_text": ROOFLINE_FLAGS.get(flag or "", ""),
        "roofline_flag_label": (flag or "").replace("_", " "),
        "roofline_levels": levels,
    }
    if all(value in (None, "", []) for value in figures.values()):
        return None
    bandwidth = figures["peak_bandwidth_bytes_per_second"]
    figures["peak_bandwidth_text"] = f"{bandwidth / 1e9:,.0f} GB/s" if bandwidth else ""
    figures["roofline_step_text"] = _step_text(roofline) if roofline else ""
    figures["definitions"] = _energy_definitions(concurrency=bool(levels))
    return figures


def _roofline_levels(roofline: Mapping[str, Any]) -> list[dict]:
    """A concurrency result's roofline per level: its fraction, ceiling and flag."""
    return [
        {
            "concurrency": level["concurrency"],
            "fraction": _figure(level.get("fraction")),
            "ceiling_tokens_per_second": _figure(level.get("ceiling_tokens_per_second")),
            "flag": level.get("flag"),
        }
        for level in roofline.get("levels") or []
    ]


def _energy_definitions(*, concurrency: bool) -> dict[str, str]:
    """The definition sentences beside the energy and roofline figures (a concurrency result's
    are of its levels)."""
    # definitions reads this module's figures for the board's rows: its sentences are read here
    # when called, not at import.
    from leaderboard.selectors.evidence import definitions

    if concurrency:
        return {
            "joules_per_token": definitions.JOULES_PER_TOKEN_CONCURRENCY,
            "roofline": definitions.ROOFLINE_CONCURRENCY,
            "ceiling": definitions.ROOFLINE_CEILING,
        }
    return {
        "joules_per_token": definitions.JOULES_PER_TOKEN,
        "roofline": definitions.ROOFLINE,
        "ceiling": definitions.ROOFLINE_CEILING,
    }


# The per-row figures the board reads (selectors.evidence.definitions.row_evidence); the API's
# joules_per_accepted_token of a leaderboard row is null since nothing derives it.
ENERGY_KEYS = ("joules_per_token", "roofline_fraction", "roofline_flag")
# The version of the rules in `energy_figures`: raise it when they change, so that figures kept
# under a run (`run_energy_figures`) are derived again.
ENERGY_RULES = 2
# How long a run's figures are kept: they never change, the bound only frees the cache.
RUN_FIGURES_SECONDS = 86400


def energy_by_run(*, run_ids: Iterable[int | None]) -> dict[int, dict]:
    """The energy and derived roofline figures of some runs (`run_energy_figures`):
    {run id: {joules_per_token, roofline_fraction, roofline_flag}}, every value None where the
    run measured none."""
    figures = run_energy_figures(run_ids=run_ids)
    return {
        pk: {key: (found or {}).get(key) for key in ENERGY_KEYS} for pk, found in figures.items()
    }


def run_energy_figures(*, run_ids: Iterable[int | None]) -> dict[int, dict | None]:
    """`energy_figures` of each run's stored result ({run id: figures or None}), computed once
    per run and kept in the page cache, one entry a run: a stored result can
    hold megabytes and its roofline reads every request, so the board, the config page and the
    run page compute each run's once. The results missing from the cache are read in one query,
    a few at a time."""
    wanted = sorted({pk for pk in run_ids if pk is not None})
    # A run's stored result is written once, when it is recorded: its figures are kept under
    # the run alone, across board changes (ENERGY_RULES names the rules that derived them).
    keys = {pk: f"run-energy:{ENERGY_RULES}:{pk}" for pk in wanted}
    cached = cache.get_many(list(keys.values()))
    found = {pk: cached[key] for pk, key in keys.items() if key in cached}
    missing = [pk for pk in wanted if pk not in found]
    if missing:
        # The whole result: the roofline is derived from its engine, host, models and requests.
        computed: dict[int, dict | None] = dict.fromkeys(missing)
        # A few at a time: a run's requests can be tens of thousands of records.
        for few in itertools.batched(missing, 4):
            computed |= {
                pk: energy_figures(whole) for pk, whole in whole_stored_results(few).items()
            }
        cache.set_many(
            {keys[pk]: figures for pk, figures in computed.items()},
            RUN_FIGURES_SECONDS,
        )
        found |= computed
    return found
