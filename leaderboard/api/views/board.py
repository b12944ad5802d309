"""The leaderboard: its paginated rows, the same rows as CSV or JSON downloads, and compare.

The list is the page's main ranking unless the query names a source or asks for retired rows;
each page is kept whole until a ranking it shows changes (`leaderboard.web.page_cache`). The
exports take the list's query (and its default) but no pages, up to `EXPORT_ROW_LIMIT` rows, with
formula-safe CSV cells (`leaderboard.exports`). Compare puts two to four configs side by side under
the rules in `selectors.answers.compare`, the same ones as the compare page.
"""

from __future__ import annotations

import functools

from django.core.paginator import Paginator
from django.http import HttpResponse, QueryDict
from django.utils.decorators import method_decorator
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.pagination import PageNumberPagination
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import exports, selectors
from leaderboard.api import finished
from leaderboard.api import serializers as s
from leaderboard.api.negotiation import CSV_RESPONSE, ExportView
from leaderboard.api.renderers import finite
from leaderboard.web import page_cache
from leaderboard.web.query import whole_number

EXPORT_ROW_LIMIT = 10_000
# The list's filters (`LeaderboardQuerySerializer`'s fields): what a kept page is keyed by.
QUERY_FIELDS = frozenset(
    ("target", "hardware", "spec_type", "protocol", "source", "ordering", "include_retired")
    + ("search",)
)


def leaderboard_query(request: Request) -> dict:
    """The leaderboard filters from the query string, validated (a 400 otherwise)."""
    query = s.LeaderboardQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


def list_params(query: QueryDict) -> dict[str, str] | None:
    """What the list reads of its query; a search (free text) is not kept, nor a page number
    the paginator refuses (a 404)."""
    page = whole_number(query.get("page", "1"))
    if query.get("search") or not page:
        return None
    params = {name: value for name in query if name in QUERY_FIELDS and (value := query.get(name))}
    return params | ({"page": str(page)} if page > 1 else {})


class RowSetPagination(PageNumberPagination):
    """Page numbers, the row count kept until rows come or go (`selectors.RowSetPaginator`)
    under the view's `row_count_key` (its validated filters); without one (a free-text search,
    a value not on the board) counted each time."""

    def paginate_queryset(self, queryset, request, view=None):
        key = getattr(view, "row_count_key", None)
        self.django_paginator_class = (
            Paginator
            if key is None
            else functools.partial(selectors.RowSetPaginator, selection=("api", key))
        )
        return super().paginate_queryset(queryset, request, view)


@extend_schema(parameters=[s.LeaderboardQuerySerializer])
@method_decorator(page_cache.cached_page(list_params), name="dispatch")
class LeaderboardList(generics.ListAPIView):
    """Leaderboard rows: each config's best average per hardware and engine release.

    By default the page's main ranking; naming a `source` or `include_retired=true` lists every
    row those filters match (`LeaderboardQuerySerializer`).
    """

    serializer_class = s.LeaderboardEntrySerializer
    pagination_class = RowSetPagination

    def get_queryset(self):
        return selectors.with_baseline_configs(
            selectors.leaderboard_entries(**leaderboard_query(self.request))
        )

    def list(  # type: ignore[override]  # DRF serves any HttpResponse; the stubs say Response
        self, request: Request, *args, **kwargs
    ) -> HttpResponse:
        query, known = leaderboard_query(request), _known_values(request)
        # Made-up queries keep nothing: not the page, not its row count.
        self.row_count_key = (
            tuple(sorted((k, str(v)) for k, v in query.items() if k != "ordering"))
            if known and not query.get("search")
            else None
        )
        entries = list(self.paginate_queryset(self.filter_queryset(self.get_queryset())) or [])
        finished.entries(entries)
        # Numbers made finite (NaN and infinities as null, `renderers.finite`).
        rows = finite(list(s.LeaderboardEntrySerializer(entries, many=True).data))
        body = JSONRenderer().render(self.get_paginated_response(rows).data)
        return page_cache.shows(
            HttpResponse(body, content_type="application/json"),
            rankings={entry.ranking_key for entry in entries},
            kept=known,
        )


def _known_values(request: Request) -> bool:
    """Whether the query's filter values are all on the board (made-up ones are not kept)."""
    choices = selectors.leaderboard_filter_choices()
    return all(
        not (value := request.query_params.get(name))
        or value in {choice for choice, _ in choices[name]}
        for name in ("target", "hardware", "spec_type")
    )


def _leaderboard_rows(request: Request) -> list[dict]:
    entries = selectors.with_baseline_configs(
        selectors.leaderboard_entries(**leaderboard_query(request))
    )[:EXPORT_ROW_LIMIT]
    # many=True makes a ListSerializer (a list); the stubs type its .data as ReturnDict.
    return s.LeaderboardEntrySerializer(finished.entries(list(entries)), many=True).data  # type: ignore[return-value]


class LeaderboardCsv(ExportView):
    """The leaderboard as CSV, with the page's filters; cells that look like formulas are
    quoted."""

    @extend_schema(parameters=[s.LeaderboardQuerySerializer], responses=CSV_RESPONSE)
    def get(self, request: Request) -> HttpResponse:
        columns = list(s.LeaderboardEntrySerializer.Meta.fields)
        return exports.csv_response(_leaderboard_rows(request), columns, "leaderboard.csv")


class LeaderboardJson(ExportView):
    """The whole filtered leaderboard as one JSON list (no pagination)."""

    @extend_schema(
        parameters=[s.LeaderboardQuerySerializer],
        responses={200: s.LeaderboardEntrySerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        return Response(_leaderboard_rows(request))


class Compare(APIView):
    """Two to four configs side by side, with differences of mean tok/s to the first (95%
    Welch)."""

    @extend_schema(
        parameters=[s.CompareQuerySerializer],
        responses={200: s.CompareSerializer, 404: OpenApiResponse(description="Unknown keys.")},
    )
    def get(self, request: Request) -> Response:
        query = s.CompareQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        # Too few or unknown keys are refused by the selector and answered by api.errors.
        keys = selectors.requested_keys(query.validated_data["keys"])
        result = selectors.compare_configs(keys=keys)
        finished.configs([column["config"] for column in result["columns"]])
        finished.entries([column["entry"] for column in result["columns"] if column["entry"]])
        body = {"configs": result["columns"], "differences": result["differences"]}
        return Response(s.CompareSerializer(body).data)
