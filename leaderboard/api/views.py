"""The REST API under /api/v1/: reads are public, writes need a token (or a session)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from leaderboard import selectors, services
from leaderboard.api import serializers as s
from leaderboard.models import Config, Hardware, Job, ModelFile, Run

logger = logging.getLogger(__name__)


def exception_handler(error: Exception, context: dict) -> Response | None:
    """DRF's handler, plus the services' refusals as 400s with field-level messages."""
    if isinstance(error, services.ServiceError):
        return Response(error.errors, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(error, DjangoPermissionDenied):
        error = exceptions.PermissionDenied(str(error) or None)
    return drf_exception_handler(error, context)


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


class ModelList(generics.ListAPIView):
    """Registered model files (only admins register them)."""

    serializer_class = s.ModelFileSerializer
    queryset = ModelFile.objects.order_by("name")


class HardwareList(generics.ListAPIView):
    """Hardware kinds: those our workers serve, and those named by self-reported uploads."""

    serializer_class = s.HardwareSerializer
    queryset = Hardware.objects.order_by("gpu_name", "slug")


class ConfigList(generics.ListAPIView):
    serializer_class = s.ConfigSerializer
    queryset = Config.objects.select_related("target", "draft", "baseline").order_by(
        "-created_at", "id"
    )


class ConfigDetail(generics.RetrieveAPIView):
    serializer_class = s.ConfigSerializer
    queryset = Config.objects.select_related("target", "draft", "baseline")
    lookup_field = "key"


@extend_schema(parameters=[s.LeaderboardQuerySerializer])
class LeaderboardList(generics.ListAPIView):
    """Leaderboard rows: each config's best average per hardware and engine release."""

    serializer_class = s.LeaderboardEntrySerializer

    def get_queryset(self):
        query = s.LeaderboardQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return selectors.leaderboard_entries(**query.validated_data)


class RunList(generics.ListAPIView):
    serializer_class = s.RunSerializer

    def get_queryset(self):
        runs = Run.objects.select_related("config", "hardware").order_by("-created_at", "-id")
        if key := self.request.query_params.get("config"):
            runs = runs.filter(config__key=key)
        return runs

    @extend_schema(
        parameters=[OpenApiParameter("config", OpenApiTypes.STR, description="config key")]
    )
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)


class RunDetail(generics.RetrieveAPIView):
    """One run with its per-request records and provenance."""

    serializer_class = s.RunDetailSerializer
    queryset = Run.objects.select_related("config", "hardware").prefetch_related("requests")


class JobDetail(generics.RetrieveAPIView):
    """A job's status and live progress."""

    serializer_class = s.JobSerializer
    queryset = Job.objects.select_related("config", "hardware", "run")


class JobCancel(APIView):
    """Cancel a queued or running job; only its owner may."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: s.JobSerializer, 409: OpenApiTypes.OBJECT})
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


class ImportCreate(APIView):
    """Import a seed-kit leaderboard_runs.csv as self-reported results (multipart upload)."""

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]
    throttle_classes = [ImportThrottle]

    @extend_schema(request=s.ImportInputSerializer, responses={201: s.ImportReportSerializer})
    def post(self, request: Request) -> Response:
        incoming = s.ImportInputSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        upload = data["file"]
        if upload.size > settings.SPECBOARD_MAX_IMPORT_BYTES:
            return Response(
                {"file": [f"the file is larger than {settings.SPECBOARD_MAX_IMPORT_BYTES} bytes"]},
                status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            )
        report = services.import_leaderboard_csv(
            content=upload.read(),
            hardware_name=data["hardware"],
            uploaded_by=request.user,
            baseline_run_name=data.get("baseline_run_name") or None,
            target_name=data.get("target_name") or None,
        )
        return Response(s.ImportReportSerializer(report).data, status=status.HTTP_201_CREATED)
