"""The leaderboard: its paginated rows, the same rows as CSV or JSON downloads, and compare.

The list is the page's main ranking unless the query names a source or asks for retired rows;
it is rendered once per change of the leaderboard rows and served from the board cache until
then, gzipped for the clients that accept it (`leaderboard.compression`). The exports take the
list's query (and its default) but no pages, up to `EXPORT_ROW_LIMIT` rows, with formula-safe
CSV cells (`leaderboard.exports`). Compare puts two to four configs side by side under the rules
in `selectors.compare`, the same ones as the compare page.
"""

from __future__ import annotations

import functools

from django.core.paginator import Paginator
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.pagination import PageNumberPagination
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import compression, exports, selectors
from leaderboard.api import serializers as s
from leaderboard.api.negotiation import CSV_RESPONSE, ExportView
from leaderboard.api.renderers import finite
from leaderboard.query import whole_number

EXPORT_ROW_LIMIT = 10_000


def leaderboard_query(request: Request) -> dict:
    """The leaderboard filters from the query string, validated (a 400 otherwise). The query of
    the first page without filters, the one most asked for, is validated once per process."""
    if not request.query_params:
        return dict(_default_query())
    query = s.LeaderboardQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


@functools.cache
def _default_query() -> tuple[tuple[str, object], ...]:
    query = s.LeaderboardQuerySerializer(data={})
    query.is_valid(raise_exception=True)
    return tuple(query.validated_data.items())


@functools.cache
def _known_parameters() -> frozenset[str]:
    return frozenset(s.LeaderboardQuerySerializer().fields) | {"page"}


class BoardPagination(PageNumberPagination):
    """Page numbers, with the row count cached until the board's row set changes (but not for a
    query that is answered uncached: its count must not fill the cache either)."""

    django_paginator_class = selectors.BoardPaginator

    def paginate_queryset(self, queryset, request, view=None):
        # The count is kept under the validated query that chose the rows (any page, however
        # the address is spelled): a page answered uncached for unknown parameters or an odd
        # page number still counts its rows once per row set, not over every row each time (a
        # second at 10M runs). Only a query the cache must not key (free text, an unknown
        # filter value) is counted afresh.
        count_key = getattr(request, "board_count_key", None)
        if count_key is None:
            self.django_paginator_class = Paginator
        else:
            self.django_paginator_class = functools.partial(
                selectors.BoardPaginator, count_key={"api": count_key}
            )
        return super().paginate_queryset(queryset, request, view)


@extend_schema(parameters=[s.LeaderboardQuerySerializer])
class LeaderboardList(generics.ListAPIView):
    """Leaderboard rows: each config's best average per hardware and engine release.

    By default the page's main ranking; naming a `source` or `include_retired=true` lists every
    row those filters match (`LeaderboardQuerySerializer`).
    """

    serializer_class = s.LeaderboardEntrySerializer
    pagination_class = BoardPagination

    def get_queryset(self):
        return selectors.leaderboard_entries(**leaderboard_query(self.request))

    def list(self, request: Request, *args, **kwargs) -> HttpResponse:
        # The page (rows, count and links) is computed once per change of the leaderboard rows
        # and kept rendered: a cached page costs no query, no serializer and no JSON encoding.
        # It is cached under the validated query alone, and only for a query of known filters
        # and values: junk parameters or unknown targets are answered uncached, so they cannot
        # fill the cache (the Redis that is also the broker). A bad query is a 400, never cached.
        def render() -> compression.Body:
            # The page's rows are read as plain values first (`selectors.row_content`), and each
            # row's representation is kept by what it is made of but its place in its ranking,
            # which is set on it afterwards: after a run is recorded, only the rows that changed
            # are read as models and serialized again (their evidence fetched for them alone),
            # not every row whose rank it moved. A row is kept with its numbers made finite (NaN
            # and infinities as null, `renderers.finite`), so the page around the kept rows
            # (their places, the count and links: whole numbers and words) is encoded as is.
            contents = selectors.row_contents(self.filter_queryset(self.get_queryset()))
            values = list(self.paginate_queryset(contents) or [])
            rows = selectors.content_cached(
                "api-board-row:content", values, selectors.content_signature, _serialized_rows
            )
            rows = [
                row | selectors.standing(row_values)
                for row, row_values in zip(rows, values, strict=True)
                if row is not None
            ]
            return compression.Body(JSONRenderer().render(self.get_paginated_response(rows).data))

        request.board_count_key = self._count_key(request)
        key = self._cache_key(request)
        body = (
            render()
            if key is None
            else selectors.ranking_cached("api-leaderboard-body", key, render)
        )
        return compression.response(request, body, content_type="application/json")

    @staticmethod
    def _count_key(request: Request) -> list | None:
        """The validated query as a cache key, if the cache may key it: known filter values, no
        free text (each term would be an entry of its own)."""
        query = leaderboard_query(request)
        if query.get("search"):
            return None
        choices = selectors.leaderboard_filter_choices()
        for name in ("target", "hardware", "spec_type"):
            value = query.get(name)
            if value and value not in {choice for choice, _ in choices[name]}:
                return None
        return sorted((name, str(value)) for name, value in query.items())

    @staticmethod
    def _cache_key(request: Request) -> dict | None:
        """The page's cache key: its count key, page number and address, for a request of known
        parameters alone (junk ones are answered uncached, so they cannot fill the cache)."""
        count_key = request.board_count_key
        if count_key is None or set(request.query_params) - _known_parameters():
            return None
        page = request.query_params.get("page", "1")
        if whole_number(page) is None:
            return None
        return {"query": count_key, "page": int(page), "base": request.build_absolute_uri("/")}


def _serialized_rows(contents: list[tuple]) -> list[dict | None]:
    """These rows (their content's values) read as models and serialized, finite; None for a row
    deleted since its values were read (its page is computed again: its ranking changed)."""
    pks = [selectors.content_pk(values) for values in contents]
    found = selectors.entries_by_pk(pks)
    present = [found[pk] for pk in pks if pk in found]
    serialized = iter(finite(list(s.LeaderboardEntrySerializer(present, many=True).data)))
    return [next(serialized) if pk in found else None for pk in pks]


def _leaderboard_rows(request: Request) -> list[dict]:
    entries = selectors.with_baseline_configs(
        selectors.leaderboard_entries(**leaderboard_query(request))
    )[:EXPORT_ROW_LIMIT]
    return s.LeaderboardEntrySerializer(entries, many=True).data


class LeaderboardCsv(ExportView):
    """The leaderboard as CSV, with the page's filters; cells that look like formulas are quoted."""

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
    """Two to four configs side by side, with differences of mean tok/s to the first (95% Welch)."""

    @extend_schema(
        parameters=[s.CompareQuerySerializer],
        responses={200: s.CompareSerializer, 404: OpenApiResponse(description="Unknown keys.")},
    )
    def get(self, request: Request) -> Response:
        query = s.CompareQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        # Too few or unknown keys are refused by the selector and answered by api.errors.
        result = selectors.compare_configs(keys=query.validated_data["keys"])
        body = {"configs": result["columns"], "differences": result["differences"]}
        return Response(s.CompareSerializer(body).data)
