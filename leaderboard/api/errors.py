"""How the API fails: every error is a JSON body, never an HTML page.

`exception_handler` (settings' EXCEPTION_HANDLER) turns DRF's own errors, Django's refusals and
the services' `ServiceError`s into JSON with the right status, and logs anything unexpected as a
500 whose body says only that it was logged. `not_found` answers any path under /api/v1/ that
no route matches with a JSON 404.
"""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from leaderboard import services
from leaderboard.api.parsers import PayloadTooLarge

logger = logging.getLogger(__name__)


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
