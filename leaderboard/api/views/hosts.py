"""GPU hosts: `GET /api/v1/hosts`, who serves each hardware kind and how long its queue is.

The same reading as the /hosts/ page (`selectors.host_board`), shown by `serializers.hosts`: each
hardware kind's queue depth, running jobs and live workers, and each registered host's status
("online", "offline", "unknown" when the broker cannot tell, "revoked"), running job and engine
release. A host's key is never part of it.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import selectors
from leaderboard.api import serializers as s


class HostList(APIView):
    """The GPU hosts serving each hardware kind, online or not, and each kind's queue."""

    @extend_schema(responses={200: s.HostBoardSerializer})
    def get(self, request: Request) -> Response:
        board = selectors.host_board(workers=selectors.cached_live_workers())
        return Response(s.HostBoardSerializer(board).data)
