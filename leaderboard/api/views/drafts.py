"""Which draft for a target: /api/v1/drafts?target=NAME, the model page's advice as data.

One group per ranking (GPU kind, workload, tok/s definition and engine release: the model
page's tables, headed by the same ranking label), each speculative type and draft file by its
best speedup over the paired baseline, with that speedup's 95% interval and where it stands
against the fastest and against no drafting (`leaderboard.selectors.answers.drafts`, which reads
`leaderboard.verdicts.advice`).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import selectors
from leaderboard.api import serializers as s


class Drafts(APIView):
    """Which draft for a target, one group per ranking, fastest first."""

    @extend_schema(parameters=[s.DraftsQuerySerializer], responses=s.DraftsSerializer)
    def get(self, request: Request) -> Response:
        query = s.DraftsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        target = query.validated_data["target"]
        body = {"target": target, "groups": selectors.draft_advice(target_name=target)}
        return Response(s.DraftsSerializer(body).data)
