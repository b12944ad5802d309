"""The REST API under /api/v1/: reads are public, writes need a token (or a session)."""

from __future__ import annotations

import csv
import io
import json
import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import FormParser
from rest_framework.permissions import SAFE_METHODS, BasePermission, IsAdminUser, IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView, set_rollback
from rest_framework.views import exception_handler as drf_exception_handler

from leaderboard import selectors, services
from leaderboard.api import serializers as s
from leaderboard.api.parsers import (
    LimitedMultiPartParser,
    PayloadTooLarge,
    parse_json_bytes,
)
from leaderboard.models import Config, Hardware, Job, ModelFile, Run

logger = logging.getLogger(__name__)

EXPORT_ROW_LIMIT = 10_000
# Spreadsheets run a cell that starts with one of these as a formula (OWASP: CSV injection).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def exception_handler(error: Exception, context: dict) -> Response:
    """Every error as JSON: DRF's own, the services' refusals, and anything unexpected (logged)."""
    if isinstance(error, services.DuplicateUploadError):
        return Response(error.errors, status=status.HTTP_409_CONFLICT)
    if isinstance(error, services.ServiceError):
        return Response(error.errors, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(error, DjangoPermissionDenied):
        error = exceptions.PermissionDenied(str(error) or None)
    elif isinstance(error, RequestDataTooBig):
        error = PayloadTooLarge()
    elif isinstance(error, SuspiciousOperation):
        error = exceptions.ParseError(str(error) or "The request is malformed.")
    response = drf_exception_handler(error, context)
    if response is None:
        view = context.get("view")
        logger.error(
            "unexpected error in %s", type(view).__name__ if view else "the API", exc_info=error
        )
        set_rollback()
        return Response(
            {"detail": "An unexpected error occurred; it has been logged."},
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    if isinstance(response.data, list):
        response.data = {"non_field_errors": response.data}
    return response


@csrf_exempt
def not_found(request: HttpRequest, unmatched: str = "") -> JsonResponse:
    """Any other path under /api/v1/: a JSON 404, never an HTML page."""
    return JsonResponse({"detail": "Not found."}, status=404)


class ReadOnlyOrAdmin(BasePermission):
    """Anyone reads; only staff write (register models, retire builds)."""

    def has_permission(self, request: Request, view) -> bool:
        if request.method in SAFE_METHODS:
            return True
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)


class JsonOnlyNegotiation(BaseContentNegotiation):
    """Errors and data are JSON whatever the Accept header says; exports set their own type."""

    def select_parser(self, request, parsers):
        for parser in parsers:
            if request.content_type.split(";")[0].strip() == parser.media_type:
                return parser
        return None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class _SettingsRateThrottle(UserRateThrottle):
    """A per-user throttle whose rate is read from settings at request time."""

    setting = ""

    def get_rate(self) -> str:
        return getattr(settings, self.setting)


class SubmissionThrottle(_SettingsRateThrottle):
    scope = "submissions"
    setting = "SPECBOARD_SUBMISSION_RATE"


class ImportThrottle(_SettingsRateThrottle):
    scope = "imports"
    setting = "SPECBOARD_IMPORT_RATE"


class UploadThrottle(_SettingsRateThrottle):
    scope = "uploads"
    setting = "SPECBOARD_IMPORT_RATE"


# Registry.


class ModelListCreate(generics.ListAPIView):
    """Registered model files (GET, public); register a GGUF file (POST, admins only)."""

    serializer_class = s.ModelFileSerializer
    permission_classes = [ReadOnlyOrAdmin]
    queryset = ModelFile.objects.order_by("name")

    @extend_schema(request=s.ModelRegistrationSerializer, responses={201: s.ModelFileSerializer})
    def post(self, request: Request) -> Response:
        incoming = s.ModelRegistrationSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        model = services.register_model(**incoming.validated_data, registered_by=request.user)
        return Response(s.ModelFileSerializer(model).data, status=status.HTTP_201_CREATED)


class HardwareList(generics.ListAPIView):
    """Hardware kinds: those our workers serve, and those named by self-reported uploads."""

    serializer_class = s.HardwareSerializer
    queryset = Hardware.objects.order_by("gpu_name", "slug")


class BuildList(generics.ListAPIView):
    """llama.cpp releases seen in results, and whether an admin retired them."""

    serializer_class = s.EngineBuildSerializer

    def get_queryset(self):
        return selectors.engine_builds()


class BuildRetire(APIView):
    """Retire a bad llama.cpp release: its rows leave the ranking (admins only)."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        request=s.RetireBuildInputSerializer, responses={200: s.RetireBuildReportSerializer}
    )
    def post(self, request: Request, release: str) -> Response:
        incoming = s.RetireBuildInputSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        if not selectors.engine_builds().filter(release=release).exists():
            raise Http404
        retired = services.retire_engine_build(
            release=release, note=incoming.validated_data.get("note", "")
        )
        report = {"release": release, "retired": True, "entries_retired": retired}
        return Response(s.RetireBuildReportSerializer(report).data)


# Configs, runs and the leaderboard.


class ConfigList(generics.ListAPIView):
    serializer_class = s.ConfigSerializer
    queryset = Config.objects.select_related("target", "draft", "baseline").order_by(
        "-created_at", "id"
    )


class ConfigDetail(generics.RetrieveAPIView):
    serializer_class = s.ConfigSerializer
    queryset = Config.objects.select_related("target", "draft", "baseline")
    lookup_field = "key"


def _leaderboard_query(request: Request) -> dict:
    query = s.LeaderboardQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


class BoardPagination(PageNumberPagination):
    """Page numbers, with the row count cached until the board's layout changes."""

    django_paginator_class = selectors.BoardPaginator


@extend_schema(parameters=[s.LeaderboardQuerySerializer])
class LeaderboardList(generics.ListAPIView):
    """Leaderboard rows: each config's best average per hardware and engine release."""

    serializer_class = s.LeaderboardEntrySerializer
    pagination_class = BoardPagination

    def get_queryset(self):
        return selectors.leaderboard_entries(**_leaderboard_query(self.request))

    def list(self, request: Request, *args, **kwargs) -> HttpResponse:
        # The page (rows, count and links) is computed once per change of the leaderboard rows
        # and kept rendered: a cached page costs no query, no serializer and no JSON encoding.
        # A bad query raises its 400 inside the computation, so it is never cached.
        page = {
            "query": sorted(request.query_params.lists()),
            "base": request.build_absolute_uri("/"),
        }
        body = selectors.board_cached(
            "api-leaderboard",
            page,
            lambda: JSONRenderer().render(super(LeaderboardList, self).list(request).data),
        )
        return HttpResponse(body, content_type="application/json")


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


class Compare(APIView):
    """Two to four configs side by side, with differences of mean tok/s to the first (95% Welch)."""

    @extend_schema(
        parameters=[s.CompareQuerySerializer],
        responses={200: s.CompareSerializer, 404: OpenApiResponse(description="Unknown keys.")},
    )
    def get(self, request: Request) -> Response:
        query = s.CompareQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        keys = query.validated_data["keys"]
        configs = {c.key: c for c in Config.objects.filter(key__in=keys)}
        if missing := [key for key in keys if key not in configs]:
            return Response(
                {"keys": [f"unknown config keys: {', '.join(missing)}"]},
                status=status.HTTP_404_NOT_FOUND,
            )
        entries = [selectors.best_entry(config=configs[key]) for key in keys]
        reference = entries[0]
        differences = [
            _difference(entry, reference, keys[0], key)
            for key, entry in zip(keys[1:], entries[1:], strict=True)
        ]
        body = {
            "configs": [
                {"config": configs[key], "entry": entry}
                for key, entry in zip(keys, entries, strict=True)
            ],
            "differences": differences,
        }
        return Response(s.CompareSerializer(body).data)


def _difference(entry, reference, reference_key: str, key: str) -> dict:
    item = {
        "config_key": key,
        "relative_to": reference_key,
        "difference": None,
        "ci95_low": None,
        "ci95_high": None,
        "degrees_of_freedom": None,
        "note": "",
    }
    if entry is None or reference is None:
        return item | {"note": "no results to compare"}
    if entry.tps_definition != reference.tps_definition:
        return item | {"note": "the two results use different tok/s definitions"}
    item["difference"] = entry.tokens_per_second - reference.tokens_per_second
    welch = selectors.entry_difference(entry=entry, reference=reference)
    if welch is None:
        item["note"] = "fewer than two requests in a batch: no interval"
    else:
        item |= {"ci95_low": welch["low"], "ci95_high": welch["high"]}
        item["degrees_of_freedom"] = welch["df"]
    if entry.hardware_id != reference.hardware_id:
        item["note"] = (item["note"] + "; " if item["note"] else "") + "different hardware"
    return item


# Exports.


def neutralise(value: object) -> object:
    """A CSV cell that a spreadsheet will show as text, never evaluate as a formula."""
    if isinstance(value, (list, dict)):
        value = json.dumps(value)
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def csv_response(rows: list[dict], columns: list[str], filename: str) -> HttpResponse:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([neutralise(row.get(column)) for column in columns])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


CSV_RESPONSE = {(200, "text/csv"): OpenApiTypes.STR}


class _Export(APIView):
    content_negotiation_class = JsonOnlyNegotiation


def _leaderboard_rows(request: Request) -> list[dict]:
    entries = selectors.leaderboard_entries(**_leaderboard_query(request))[:EXPORT_ROW_LIMIT]
    return s.LeaderboardEntrySerializer(entries, many=True).data


class LeaderboardCsv(_Export):
    """The leaderboard as CSV, with the page's filters; cells that look like formulas are quoted."""

    @extend_schema(parameters=[s.LeaderboardQuerySerializer], responses=CSV_RESPONSE)
    def get(self, request: Request) -> HttpResponse:
        columns = list(s.LeaderboardEntrySerializer.Meta.fields)
        return csv_response(_leaderboard_rows(request), columns, "leaderboard.csv")


class LeaderboardJson(_Export):
    """The whole filtered leaderboard as one JSON list (no pagination)."""

    @extend_schema(
        parameters=[s.LeaderboardQuerySerializer],
        responses={200: s.LeaderboardEntrySerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        return Response(_leaderboard_rows(request))


def _run_requests(pk: int) -> tuple[Run, list[dict]]:
    run = selectors.run_by_id(run_id=pk)
    if run is None:
        raise Http404
    return run, selectors.request_records(run=run)


class RunRequestsCsv(_Export):
    """A run's per-request records as CSV."""

    @extend_schema(responses=CSV_RESPONSE)
    def get(self, request: Request, pk: int) -> HttpResponse:
        run, rows = _run_requests(pk)
        columns = list(selectors.REQUEST_EXPORT_FIELDS)
        return csv_response(rows, columns, f"run-{run.pk}-requests.csv")


class RunRequestsJson(_Export):
    """A run's per-request records as JSON."""

    @extend_schema(responses={200: s.RequestRecordSerializer(many=True)})
    def get(self, request: Request, pk: int) -> Response:
        return Response(s.RequestRecordSerializer(_run_requests(pk)[1], many=True).data)


# Submissions and jobs.


class JobDetail(generics.RetrieveAPIView):
    """A job's status and live progress."""

    serializer_class = s.JobSerializer
    queryset = Job.objects.select_related("config", "hardware", "run")


class JobCancel(APIView):
    """Cancel a queued or running job; only its owner may."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: s.JobSerializer})
    def post(self, request: Request, pk: int) -> Response:
        job = selectors.job_by_id(job_id=pk)
        if job is None:
            raise Http404
        if not services.cancel_job(job=job, user=request.user):
            return Response(
                {"detail": f"job {pk} has already {job.status}"}, status=status.HTTP_409_CONFLICT
            )
        job.refresh_from_db()
        return Response(s.JobSerializer(job).data)


class SubmissionListCreate(generics.ListAPIView):
    """Your submissions (GET), or submit a config to be measured (POST)."""

    serializer_class = s.JobSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        return selectors.user_jobs(user=self.request.user)

    def get_throttles(self):
        return [SubmissionThrottle()] if self.request.method == "POST" else super().get_throttles()

    @extend_schema(request=s.SubmissionInputSerializer, responses={201: s.JobSerializer})
    def post(self, request: Request) -> Response:
        incoming = s.SubmissionInputSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            job = services.submit_config(
                owner=request.user,
                data=incoming.validated_data["config"],
                hardware_slug=incoming.validated_data.get("hardware"),
            )
        except services.SubmissionError as error:
            errors = dict(error.errors)
            body = {"hardware": errors.pop("hardware")} if "hardware" in errors else {}
            if errors:
                body["config"] = errors
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        return Response(s.JobSerializer(job).data, status=status.HTTP_201_CREATED)


# Community results.


def _too_large(upload) -> Response | None:
    if upload.size > settings.SPECBOARD_MAX_IMPORT_BYTES:
        return Response(
            {"file": [f"the file is larger than {settings.SPECBOARD_MAX_IMPORT_BYTES} bytes"]},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    return None


class ImportCreate(APIView):
    """Import a seed-kit leaderboard_runs.csv as self-reported results (multipart upload)."""

    permission_classes = [IsAuthenticated]
    parser_classes = [LimitedMultiPartParser, FormParser]
    throttle_classes = [ImportThrottle]

    @extend_schema(request=s.ImportInputSerializer, responses={201: s.ImportReportSerializer})
    def post(self, request: Request) -> Response:
        incoming = s.ImportInputSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        if refusal := _too_large(data["file"]):
            return refusal
        report = services.import_leaderboard_csv(
            content=data["file"].read(),
            hardware_name=data["hardware"],
            uploaded_by=request.user,
            baseline_run_name=data.get("baseline_run_name") or None,
            target_name=data.get("target_name") or None,
        )
        return Response(s.ImportReportSerializer(report).data, status=status.HTTP_201_CREATED)


class UploadCreate(APIView):
    """Upload a runner result file measured on your own GPU; it is listed as self-reported."""

    permission_classes = [IsAuthenticated]
    parser_classes = [LimitedMultiPartParser, FormParser]
    throttle_classes = [UploadThrottle]

    @extend_schema(request=s.UploadInputSerializer, responses={201: s.UploadReportSerializer})
    def post(self, request: Request) -> Response:
        incoming = s.UploadInputSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        upload = incoming.validated_data["file"]
        if refusal := _too_large(upload):
            return refusal
        try:
            result = parse_json_bytes(upload.read())
        except exceptions.ParseError as error:
            return Response({"file": [str(error.detail)]}, status=status.HTTP_400_BAD_REQUEST)
        if not isinstance(result, dict):
            return Response(
                {"file": ["a runner result file holds one JSON object"]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        shape = s.ResultFileSerializer(data=result)
        if not shape.is_valid():
            return Response({"file": shape.errors}, status=status.HTTP_400_BAD_REQUEST)
        runs = services.record_self_reported_result(
            result=result,
            hardware_name=incoming.validated_data["hardware"],
            uploaded_by=request.user,
        )
        report = {"hardware": runs[0].hardware.slug, "self_reported": True, "runs": runs}
        return Response(s.UploadReportSerializer(report).data, status=status.HTTP_201_CREATED)
