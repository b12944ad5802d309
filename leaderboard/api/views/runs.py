"""Runs: each one batch of measured requests of a config, on one hardware kind and release.

A run's detail carries its per-request records and provenance; the records also download on
their own as CSV (formula-safe cells, `leaderboard.exports`) or JSON. Each is megabytes for a
large run, so each is rendered once and kept (`exports.kept`): the downloads under the run, the
detail under the run and the fields pairing may still set on it (the rest never changes), and
all three are throttled for visitors not signed in. Runs are read-only here: they are recorded by
the workers and by uploads, never through these views.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from django.http import Http404, HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.request import Request

from leaderboard import exports, selectors
from leaderboard.api import finished
from leaderboard.api import serializers as s
from leaderboard.api.negotiation import CSV_RESPONSE, ExportView
from leaderboard.api.renderers import FiniteJSONRenderer
from leaderboard.api.throttles import AnonymousExportThrottle
from leaderboard.models import Run


@extend_schema(parameters=[s.RunQuerySerializer])
class RunList(finished.FinishedValues, generics.ListAPIView):
    serializer_class = s.RunSerializer

    def finish(self, objects: Sequence[Run]) -> None:
        finished.runs(objects)

    def get_queryset(self):
        query = s.RunQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        runs = Run.objects.select_related("config", "hardware").order_by("-created_at", "-id")
        if key := query.validated_data.get("config"):
            runs = runs.filter(config__key=key)
        if hardware := query.validated_data.get("hardware"):
            runs = runs.filter(hardware__slug=hardware)
        return runs


# What a run's detail shows that can still change after it is recorded (pairing sets a few of
# its fields): every column but the stored result, which is written once.
SHOWN_COLUMNS = [
    *(field.attname for field in Run._meta.concrete_fields if field.name != "raw_result"),
    "config__key",
    "hardware__slug",
]


class RunDetail(generics.RetrieveAPIView):
    """One run with its per-request records and provenance."""

    serializer_class = s.RunDetailSerializer
    queryset = Run.objects.select_related("config", "hardware")
    throttle_classes = [AnonymousExportThrottle]

    def retrieve(  # type: ignore[override]  # DRF serves any HttpResponse; the stubs say Response
        self, request: Request, *args: object, **kwargs: object
    ) -> HttpResponse:
        # The body is kept under the run and its columns (one small read): its records and what
        # is derived from them and from its stored result never change.
        shown = Run.objects.filter(pk=self.kwargs["pk"]).values(*SHOWN_COLUMNS).first()
        if shown is None:
            raise Http404
        digest = hashlib.sha256(json.dumps(shown, sort_keys=True, default=str).encode())
        return exports.kept(
            f"api-run:{shown['id']}:{digest.hexdigest()[:32]}",
            lambda: json_body(
                s.RunDetailSerializer(finished.runs([self.get_object()], detail=True)[0]).data
            ),
        )


def json_body(data: object) -> HttpResponse:
    """`data` as the API's JSON (`FiniteJSONRenderer`), ready to keep."""
    return HttpResponse(FiniteJSONRenderer().render(data), content_type="application/json")


def _run(pk: int) -> Run:
    run = selectors.run_by_id(run_id=pk)
    if run is None:
        raise Http404
    return run


class RunRequestsCsv(ExportView):
    """A run's per-request records as CSV."""

    @extend_schema(responses=CSV_RESPONSE)
    def get(self, request: Request, pk: int) -> HttpResponse:
        run = _run(pk)
        columns = list(selectors.REQUEST_EXPORT_FIELDS)
        return exports.kept(
            f"api-run-requests-csv:{run.pk}",
            lambda: exports.csv_response(
                selectors.request_records(run=run), columns, f"run-{run.pk}-requests.csv"
            ),
        )


class RunRequestsJson(ExportView):
    """A run's per-request records as JSON."""

    @extend_schema(responses={200: s.RequestRecordSerializer(many=True)})
    def get(self, request: Request, pk: int) -> HttpResponse:
        run = _run(pk)
        return exports.kept(
            f"api-run-requests-json:{run.pk}",
            lambda: json_body(
                s.RequestRecordSerializer(selectors.request_records(run=run), many=True).data
            ),
        )
