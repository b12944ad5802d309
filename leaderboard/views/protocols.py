"""Pages of the concurrency and categories protocols: /concurrency/ and /categories/.

Small function views over the reads of `leaderboard.selectors.evidence.protocols` (through
`selectors.concurrency_page`) and `leaderboard.selectors.evidence.categories`, with the target and
hardware choices the n_max page has (the pair with the most rows first; an unknown pair falls
back to it).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_safe

from leaderboard import selectors
from leaderboard.selectors.answers.serving import tpot_objective
from leaderboard.web import page_cache
from leaderboard.web.query import whole_number


def _chosen_pair(request: HttpRequest, pairs: list[tuple[str, str, str]]) -> tuple[str, str]:
    """The (target, hardware) the query asks for when rows exist for it, else the first pair."""
    target = request.GET.get("target", "")
    hardware = request.GET.get("hardware", "")
    if (target, hardware) in {(t, h) for t, h, _ in pairs}:
        return target, hardware
    return (pairs[0][0], pairs[0][1]) if pairs else ("", "")


def _selector_context(pairs: list[tuple[str, str, str]], target: str, hardware: str) -> dict:
    return {
        "pairs": pairs,
        "targets": sorted({t for t, _, _ in pairs}),
        "hardware_choices": sorted({(h, name) for _, h, name in pairs}),
        "target": target,
        "hardware": hardware,
    }


def _concurrency_params(query: QueryDict) -> dict[str, str] | None:
    """What the concurrency page reads of its query; an objective is any number, so a page
    that names one is not kept."""
    if "tpot_ms" in query:
        return None
    return {name: value for name in ("target", "hardware", "level") if (value := query.get(name))}


@require_safe
@page_cache.cached_page(_concurrency_params)
def concurrency(request: HttpRequest) -> HttpResponse:
    pairs = selectors.concurrency_targets()
    target, hardware = _chosen_pair(request, pairs)
    level = request.GET.get("level", "")
    page = selectors.concurrency_page(
        target_name=target,
        hardware_slug=hardware,
        level=whole_number(level, max_digits=5),
        # The goodput objective (?tpot_ms=); anything but a positive number gives the default.
        tpot_ms_objective=tpot_objective(request.GET.get("tpot_ms")),
    )
    response = render(
        request,
        "leaderboard/concurrency.html",
        _selector_context(pairs, target, hardware) | page,
    )
    # Kept for the pair the query names (or none) at one of its levels (or none).
    asked = (request.GET.get("target", ""), request.GET.get("hardware", ""))
    kept = asked in {("", ""), (target, hardware)}
    return page_cache.shows(
        response, rankings=None, kept=kept and level in ("", str(page["series"]["level"]))
    )


@require_safe
def categories(request: HttpRequest) -> HttpResponse:
    pairs = selectors.category_targets()
    target, hardware = _chosen_pair(request, pairs)
    heatmap = (
        selectors.category_heatmap(target_name=target, hardware_slug=hardware)
        if target
        else {"categories": [], "rows": []}
    )
    return render(
        request,
        "leaderboard/categories.html",
        _selector_context(pairs, target, hardware) | {"heatmap": heatmap},
    )
