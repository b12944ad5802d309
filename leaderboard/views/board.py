"""The front page: the fastest draft per GPU and target at a glance, the leaderboard's filters,
its rankings a page at a time (each with its baseline as the denominator), the rows kept off the
ranking, the speedup chart, and the board's CSV and JSON downloads."""

from __future__ import annotations

import threading

from django.contrib.messages import get_messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from leaderboard import compression, selectors
from leaderboard.query import whole_number
from leaderboard.selectors.glance import fastest_drafts

FILTERS = ("target", "hardware", "spec_type", "protocol", "source", "ordering")
PAGE_SIZE = 50
BOARD_TEMPLATE = "leaderboard/_leaderboard_board.html"
RANKED_TEMPLATE = "leaderboard/_board_ranked.html"
KEPT_OFF_TEMPLATE = "leaderboard/_board_kept_off.html"
CHART_TEMPLATE = "leaderboard/_speedup_chart.html"


@require_safe
def leaderboard(request: HttpRequest) -> HttpResponse:
    choices = selectors.leaderboard_filter_choices()
    filters = {name: request.GET.get(name, "") for name in FILTERS}
    filters = {
        name: value if value in dict(choices[name]) else "" for name, value in filters.items()
    }
    page_number = request.GET.get("page", "")
    view = {
        "filters": filters,
        # NUL cannot reach PostgreSQL in a query; a search term is plain text.
        "search": request.GET.get("q", "").replace("\x00", "").strip()[:100],
        "include_all": request.GET.get("all") == "1",
    }
    # A number past the last page is the last page, cached as that page and not as one of its
    # own (each number an anonymous client made up was a cache entry). The first page always
    # exists: it is served from the cache without counting the board's rows.
    requested = whole_number(page_number, max_digits=18) or 1
    view["page"] = (
        requested
        if requested == 1
        else selectors.board_page_number(
            filters=filters,
            search=view["search"],
            include_all=view["include_all"],
            page=requested,
            page_size=PAGE_SIZE,
        )
    )
    # The board (filters, table, pager) is rendered once and served from the cache until a
    # ranking it shows changes (or rows come or go); only the site header around it is rendered
    # per request.
    board = selectors.ranking_cached(
        "leaderboard-page", view, lambda: _board_html(view=view, choices=choices)
    )

    # A visitor who is not signed in and has no message waiting sees the same page around the
    # board for the same address: this process renders it once per board (the board's string
    # is the same object while it is kept) and serves those bytes until the board changes,
    # gzipped once for the browsers that accept it (`leaderboard.compression`: such a page
    # holds no token).
    def page() -> HttpResponse:
        return render(request, "leaderboard/leaderboard.html", {"board": mark_safe(board)})

    if request.user.is_authenticated or len(get_messages(request)):
        return page()
    key = (board, request.get_full_path())
    with _PAGES_LOCK:
        body = _ANONYMOUS_PAGES.get(key)
    if body is None:
        body = compression.Body(page().content)
        with _PAGES_LOCK:
            _ANONYMOUS_PAGES[key] = body
            while len(_ANONYMOUS_PAGES) > ANONYMOUS_PAGES_KEPT:
                _ANONYMOUS_PAGES.pop(next(iter(_ANONYMOUS_PAGES)))
    return compression.response(request, body)


# How many whole pages (a board and an address) each process keeps for visitors not signed in.
ANONYMOUS_PAGES_KEPT = 16
_ANONYMOUS_PAGES: dict[tuple[str, str], compression.Body] = {}
_PAGES_LOCK = threading.Lock()


def _board_html(*, view: dict, choices: dict) -> str:
    """The leaderboard's glance, filters, chart, ranked page and kept-off rows as HTML, from
    validated input. The chart, the ranked page and the kept-off rows are each kept until a
    ranking they read changes: a run recorded in the page's ranking renders the ranked page
    again, not the rows kept off it (other rankings) nor the chart of another target."""
    filters, search, include_all = view["filters"], view["search"], view["include_all"]
    queries = _queries(filters=filters, search=search, include_all=include_all)
    ranked_html, has_rows = selectors.ranking_cached(
        "leaderboard-ranked", view, lambda: _ranked_html(view=view, queries=queries)
    )
    kept_off_html, test_weights = (
        ("", False)
        if include_all
        else selectors.ranking_cached(
            "leaderboard-kept-off",
            {"filters": filters, "search": search, "has_rows": has_rows},
            lambda: _kept_off_html(filters=filters, search=search, has_rows=has_rows),
        )
    )
    chart = {name: filters[name] for name in ("target", "hardware", "spec_type", "protocol")}
    chart_html = selectors.ranking_cached(
        "leaderboard-chart",
        chart,
        lambda: render_to_string(
            CHART_TEMPLATE, {"speedup_chart": selectors.speedup_chart(**chart)}
        ),
    )
    return render_to_string(
        BOARD_TEMPLATE,
        queries
        | {
            "glance": fastest_drafts(),
            "chart": mark_safe(chart_html),
            "ranked": mark_safe(ranked_html),
            "kept_off": mark_safe(kept_off_html),
            "test_weights": test_weights,
            "include_all": include_all,
            "search": search,
            "choices": choices,
            "filters": filters,
        },
    )


def _ranked_html(*, view: dict, queries: dict[str, str]) -> tuple[str, bool]:
    """A page of ranked rows, its pager and its rankings' baselines as HTML, and whether it has
    ranked rows."""
    ranked = selectors.board_ranked(
        filters=view["filters"],
        search=view["search"],
        include_all=view["include_all"],
        page=view["page"],
        page_size=PAGE_SIZE,
    )
    html = render_to_string(
        RANKED_TEMPLATE, ranked | queries | {"include_all": view["include_all"]}
    )
    return html, bool(ranked["rows"])


def _kept_off_html(*, filters: dict, search: str, has_rows: bool) -> tuple[str, bool]:
    """The rows kept off the ranking as HTML, and whether test weights are among them."""
    kept = selectors.board_kept_off(filters=filters, search=search, page_size=PAGE_SIZE)
    html = render_to_string(KEPT_OFF_TEMPLATE, kept | {"has_rows": has_rows})
    return html, bool(kept["test_weights"])


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


def forget_anonymous_pages() -> None:
    """Drop the whole pages this process keeps (tests start from none)."""
    with _PAGES_LOCK:
        _ANONYMOUS_PAGES.clear()
