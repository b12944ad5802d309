"""Content negotiation for the export endpoints, which set their own content type.

DRF's default negotiation answers 406 to an Accept header it cannot render, and would pick a
renderer from that header. `JsonOnlyNegotiation` ignores Accept: data and errors are JSON, and a
CSV export writes its own response. `ExportView` is the base of every export view (throttled for
visitors not signed in), and `CSV_RESPONSE` is how the OpenAPI schema describes a CSV body.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.views import APIView

from leaderboard.api.throttles import AnonymousExportThrottle

CSV_RESPONSE = {(200, "text/csv"): OpenApiTypes.STR}


class JsonOnlyNegotiation(BaseContentNegotiation):
    """Errors and data are JSON whatever the Accept header says; exports set their own type."""

    def select_parser(self, request, parsers):
        for parser in parsers:
            if request.content_type.split(";")[0].strip() == parser.media_type:
                return parser
        return None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class ExportView(APIView):
    """A download: JSON or CSV whatever the client's Accept header asks for, held to
    SPECBOARD_ANONYMOUS_EXPORT_RATE per address for visitors not signed in."""

    content_negotiation_class = JsonOnlyNegotiation
    throttle_classes = [AnonymousExportThrottle]
