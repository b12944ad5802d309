"""The API's root, `GET /api/v1/` (and `/api/`): every collection's link, the schema, the docs.

A client or a person who starts at the top finds every collection from here, never Django's
list of URL patterns. Only collections are listed: a resource by id or key is linked from them.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from leaderboard.api import serializers as s

# (route name, what it holds): in the order a newcomer reads them.
RESOURCES = (
    ("api-leaderboard", "leaderboard", "the ranked rows, one ranking per workload"),
    ("api-configs", "configs", "every benchmark config, by key"),
    ("api-runs", "runs", "measured runs with their evidence"),
    ("api-compare", "compare", "two to four configs side by side (?keys=a,b)"),
    ("api-drafts", "drafts", "which draft for a target, per GPU kind"),
    ("api-concurrency", "concurrency", "per-level figures of the concurrency protocol"),
    ("api-models", "models", "registered model files"),
    ("api-model-requests", "model_requests", "requests for Hugging Face models"),
    ("api-hardware", "hardware", "hardware kinds"),
    ("api-builds", "builds", "llama.cpp builds seen"),
    ("api-hosts", "hosts", "GPU hosts and their queues"),
    ("api-submissions", "submissions", "your submitted jobs; POST a config (token)"),
    ("api-allowance", "allowance", "what your account may still submit (token)"),
    ("api-uploads", "uploads", "POST a runner result file (token)"),
    ("api-imports", "imports", "POST a seed-kit CSV (token)"),
    ("api-export-leaderboard-csv", "leaderboard_csv", "the leaderboard as CSV"),
    ("api-export-leaderboard-json", "leaderboard_json", "the leaderboard as JSON"),
)


class ApiRoot(APIView):
    """Where everything is: each collection's link and what it holds, the schema and the docs."""

    @extend_schema(responses=s.ApiRootSerializer)
    def get(self, request: Request) -> Response:
        return Response(
            {
                "version": "v1",
                "resources": [
                    {"name": name, "url": reverse(route, request=request), "description": text}
                    for route, name, text in RESOURCES
                ],
                "schema": reverse("api-schema", request=request),
                "docs": reverse("api-docs", request=request),
                "guide": "docs/API.md in the project's repository",
            }
        )
