"""Runs: each one batch of measured requests of a config, on one hardware kind and release.

A run's detail carries its per-request records and provenance; the records also download on
their own as CSV (formula-safe cells, `leaderboard.exports`) or JSON. Runs are read-only here:
they are recorded by the workers and by uploads, never through these views.
"""

from __future__ import annotations

from django.http import Http404, HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard import exports, selectors
from leaderboard.api import serializers as s
from leaderboard.api.negotiation import CSV_RESPONSE, ExportView
from leaderboard.models import Run


@extend_schema(parameters=[s.RunQuerySerializer])
class RunList(generics.ListAPIView):
    serializer_class = s.RunSerializer

    def get_queryset(self):
        query = s.RunQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        runs = Run.objects.select_related("config", "hardware").order_by("-created_at", "-id")
        if key := query.validated_data.get("config"):
            runs = runs.filter(config__key=key)
        if hardware := query.validated_data.get("hardware"):
            runs = runs.filter(hardware__slug=hardware)
        return runs


class RunDetail(generics.RetrieveAPIView):
    """One run with its per-request records and provenance."""

    serializer_class = s.RunDetailSerializer
    queryset = Run.objects.select_related("config", "hardware").prefetch_related("requests")


def _run_requests(pk: int) -> tuple[Run, list[dict]]:
    run = selectors.run_by_id(run_id=pk)
    if run is None:
        raise Http404
    return run, selectors.request_records(run=run)


class RunRequestsCsv(ExportView):
    """A run's per-request records as CSV."""

    @extend_schema(responses=CSV_RESPONSE)
    def get(self, request: Request, pk: int) -> HttpResponse:
        run, rows = _run_requests(pk)
        columns = list(selectors.REQUEST_EXPORT_FIELDS)
        return exports.csv_response(rows, columns, f"run-{run.pk}-requests.csv")


class RunRequestsJson(ExportView):
    """A run's per-request records as JSON."""

    @extend_schema(responses={200: s.RequestRecordSerializer(many=True)})
    def get(self, request: Request, pk: int) -> Response:
        return Response(s.RequestRecordSerializer(_run_requests(pk)[1], many=True).data)
