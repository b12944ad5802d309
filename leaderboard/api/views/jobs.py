"""Jobs: a submitted config's place in the queue, its live progress, and cancelling it.

Anyone may read a job by its id. Only its owner (or staff) may cancel it, and only while it is
queued or running; a job that has already finished answers 409 with its status.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import selectors, services
from leaderboard.api import finished
from leaderboard.api import serializers as s
from leaderboard.api.errors import Conflict
from leaderboard.api.permissions import signed_in_user
from leaderboard.models import Job


class JobDetail(finished.FinishedValues, generics.RetrieveAPIView):
    """A job's status and live progress."""

    serializer_class = s.JobSerializer
    queryset = Job.objects.select_related("config", "hardware", "run")

    def finish(self, objects: Sequence[Job]) -> None:
        finished.jobs(objects)


class JobCancel(APIView):
    """Cancel a queued or running job; only its owner may."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: s.JobSerializer})
    def post(self, request: Request, pk: int) -> Response:
        job = selectors.job_by_id(job_id=pk)
        if job is None:
            raise Http404
        if not services.cancel_job(job=job, user=signed_in_user(request)):
            raise Conflict(f"job {pk} has already {job.status}")
        job.refresh_from_db()
        return Response(s.JobSerializer(finished.job(job)).data)
