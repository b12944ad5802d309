"""The front page: the fastest draft per GPU and target at a glance, the leaderboard's filters,
its rankings a page at a time (each with its baseline as the denominator), the rows kept off the
ranking, the speedup chart, and the board's CSV and JSON downloads."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from leaderboard import selectors
from leaderboard.selectors.board.glance import fastest_drafts
from leaderboard.web import board_version, page_cache
from leaderboard.web.query import whole_number

FILTERS = ("target", "hardware", "spec_type", "protocol", "source", "ordering")
PAGE_SIZE = 50
BOARD_TEMPLATE = "leaderboard/_leaderboard_board.html"
RANKED_TEMPLATE = "leaderboard/_board_ranked.html"
KEPT_OFF_TEMPLATE = "leaderboard/_board_kept_off.html"
CHART_TEMPLATE = "leaderboard/_speedup_chart.html"


def board_params(query: QueryDict) -> dict[str, str] | None:
    """What the front page reads of its query (a search is not kept)."""
    if query.get("q", "").strip():
        return None
    params = {name: value for name in FILTERS if (value := query.get(name))}
    if query.get("all") == "1":
        params["all"] = "1"
    if (page := whole_number(query.get("page", ""), max_digits=18) or 1) > 1:
        params["page"] = str(page)
    return params


@require_safe
@page_cache.cached_page(board_params)
def leaderboard(request: HttpRequest) -> HttpResponse:
    choices = selectors.leaderboard_filter_choices()
    filters = {name: request.GET.get(name, "") for name in FILTERS}
    filters = {
        name: value if value in dict(choices[name]) else "" for name, value in filters.items()
    }
    # NUL cannot reach PostgreSQL in a query; a search term is plain text.
    search = request.GET.get("q", "").replace("\x00", "").strip()[:100]
    include_all = request.GET.get("all") == "1"
    # A number past the last page is the last page.
    requested = whole_number(request.GET.get("page", ""), max_digits=18) or 1
    page = (
        requested
        if requested == 1
        else selectors.board_page_number(
            filters=filters,
            search=search,
            include_all=include_all,
            page=requested,
            page_size=PAGE_SIZE,
        )
    )
    view = {"filters": filters, "search": search, "include_all": include_all, "choices": choices}
    board, rankings = _board(view=view, page=page)
    response = render(request, "leaderboard/leaderboard.html", {"board": mark_safe(board)})
    # An unknown filter value or a page past the last is not kept under its own name.
    asked = {name: request.GET.get(name, "") for name in FILTERS}
    return page_cache.shows(
        response, rankings=rankings, kept=page == requested and asked == filters
    )


def _board(*, view: dict, page: int) -> tuple[str, set[str]]:
    """The leaderboard's glance, filters, chart, ranked page and kept-off rows as HTML, from
    validated input, and the rankings they show."""
    filters, search, include_all = view["filters"], view["search"], view["include_all"]
    ranked = selectors.board_ranked(
        filters=filters, search=search, include_all=include_all, page=page, page_size=PAGE_SIZE
    )
    kept = (
        {"kept_off": [], "test_weights": []}
        if include_all
        else selectors.board_kept_off(filters=filters, search=search, page_size=PAGE_SIZE)
    )
    chart = selectors.speedup_chart(
        **{name: filters[name] for name in ("target", "hardware", "spec_type", "protocol")}
    )
    glance = fastest_drafts()
    context = (
        view
        | _queries(filters=filters, search=search, include_all=include_all)
        | {"glance": glance, "test_weights": bool(kept["test_weights"])}
    )
    html = render_to_string(
        BOARD_TEMPLATE,
        context
        | {
            "chart": render_to_string(CHART_TEMPLATE, {"speedup_chart": chart}),
            "ranked": render_to_string(RANKED_TEMPLATE, ranked | context),
            "kept_off": render_to_string(
                KEPT_OFF_TEMPLATE, kept | {"has_rows": bool(ranked["rows"])}
            ),
        },
    )
    # The kept-off rows are in no ranking's order: a change to one raises KEPT_OFF.
    shown = [*ranked["rows"], *ranked["baselines"]]
    rankings = {row["entry"].ranking_key for row in shown} | glance.rankings
    if kept["kept_off"] or kept["test_weights"]:
        rankings.add(board_version.KEPT_OFF)
    return html, rankings | set(chart["rankings"] if chart else ())


def _queries(*, filters: dict[str, str], search: str, include_all: bool) -> dict[str, str]:
    """The query strings of the board's links: "query" keeps the filters, the search and the
    toggle as they are (for the pager), "toggle_query" flips the toggle; "csv_url" and
    "json_url" download the rows the page shows (`_export_query`)."""
    query = QueryDict(mutable=True)
    query.update({name: value for name, value in filters.items() if value})
    if search:
        query["q"] = search
    toggle = query.copy()
    if include_all:
        query["all"] = "1"
    else:
        toggle["all"] = "1"
    export = _export_query(filters=filters, search=search, include_all=include_all)
    return {
        "query": query.urlencode(),
        "toggle_query": toggle.urlencode(),
        "csv_url": f"{reverse('api-export-leaderboard-csv')}?{export}".rstrip("?"),
        "json_url": f"{reverse('api-export-leaderboard-json')}?{export}".rstrip("?"),
    }


def _export_query(*, filters: dict[str, str], search: str, include_all: bool) -> str:
    """The API export's query for the rows the page shows: the same filters and search; the
    main ranking by default, as on the page, and with the toggle every row of the chosen
    source, retired builds' included (`LeaderboardQuerySerializer`)."""
    query = QueryDict(mutable=True)
    query.update({name: value for name, value in filters.items() if value and name != "source"})
    if search:
        query["search"] = search
    if include_all:
        query["source"] = filters["source"] or "all"
        query["include_retired"] = "true"
    return query.urlencode()
