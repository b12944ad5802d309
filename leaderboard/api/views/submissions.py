"""What users send in: configs to be measured, seed-kit CSV imports, and runner result files.

A submission queues a job on our hardware (POST /submissions, throttled per user). An import
(a seed-kit leaderboard_runs.csv) and an upload (a runner result file measured on the user's own
GPU) are listed as self-reported. The input serializers check the request (a file larger than
SPECBOARD_MAX_IMPORT_BYTES is a 413; a result file is parsed and checked by the runner's one
result model); the services record it, and their refusals (over the allowance, an invalid
config, the same file twice) are answered by `leaderboard.api.errors`.
"""

from __future__ import annotations

from collections.abc import Sequence

from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.parsers import FormParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import selectors, services
from leaderboard.api import finished
from leaderboard.api import serializers as s
from leaderboard.api.parsers import LimitedMultiPartParser
from leaderboard.api.permissions import signed_in_user
from leaderboard.api.throttles import ImportThrottle, UploadThrottle
from leaderboard.models import Job


class SubmissionListCreate(finished.FinishedValues, generics.ListAPIView):
    """Your submissions (GET), or submit a config to be measured (POST)."""

    serializer_class = s.JobSerializer
    permission_classes = [IsAuthenticated]

    def finish(self, objects: Sequence[Job]) -> None:
        finished.jobs(objects)

    def get_queryset(self):
        return selectors.user_jobs(user=self.request.user)

    @extend_schema(request=s.SubmissionInputSerializer, responses={201: s.JobSerializer})
    def post(self, request: Request) -> Response:
        incoming = s.SubmissionInputSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        job = services.submit_config(
            owner=signed_in_user(request),
            data=incoming.validated_data["config"],
            hardware_slug=incoming.validated_data.get("hardware"),
        )
        return Response(s.JobSerializer(finished.job(job)).data, status=status.HTTP_201_CREATED)


class AllowanceDetail(APIView):
    """Your limits and what is left of them: submissions this period, tokens per job and today."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: s.AllowanceSerializer})
    def get(self, request: Request) -> Response:
        allowance = selectors.allowance(user=signed_in_user(request))
        return Response(s.AllowanceSerializer(allowance.as_dict()).data)


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
        report = services.import_leaderboard_csv(
            content=data["file"].read(),
            hardware_name=data["hardware"],
            uploaded_by=signed_in_user(request),
            baseline_run_name=data.get("baseline_run_name") or None,
            target_name=data.get("target_name") or None,
            publish_name=data["publish_name"],
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
        runs = services.record_self_reported_result(
            result=incoming.validated_data["result"],
            hardware_name=incoming.validated_data["hardware"],
            uploaded_by=signed_in_user(request),
            publish_name=incoming.validated_data["publish_name"],
        )
        report = {
            "hardware": runs[0].hardware.slug,
            "self_reported": True,
            "runs": finished.runs(runs),
        }
        return Response(s.UploadReportSerializer(report).data, status=status.HTTP_201_CREATED)
