"""How the API fails: every error is a JSON body, never an HTML page.

`exception_handler` (settings' EXCEPTION_HANDLER) is the one place that answers a refusal: views
call the services and selectors and let their errors rise. It turns DRF's own errors, Django's
refusals, the services' `ServiceError`s and compare's refusals into JSON with the right status,
and logs anything unexpected as a 500 whose body says only that it was logged:

- `services.LimitReached`: 429 with `Retry-After` and a one-line `detail`;
- `services.SubmissionError`: 400, the `hardware` field's messages and the config's fields
  nested under `config` (the request's two fields);
- `services.DuplicateUploadError`: 409; any other `services.ServiceError`: 400, by field;
- `selectors.UnknownKeys`: 404 and `selectors.WrongNumberOfKeys`: 400, under `keys`;
- `Conflict` (a view's refusal of the current state, such as cancelling a finished job): 409.

`not_found` answers any path under /api/v1/ that no route matches with a JSON 404.
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

from leaderboard import selectors, services
from leaderboard.api.parsers import PayloadTooLarge
from leaderboard.forms import worded

logger = logging.getLogger(__name__)


class Conflict(exceptions.APIException):
    """The request conflicts with the current state (a finished job cannot be cancelled)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state."
    default_code = "conflict"


def service_refusal(error: services.ServiceError) -> Response:
    """A service's refusal, its messages by field, with the status that says what it is."""
    if isinstance(error, services.LimitReached):
        # The same limit as the submit form's, counted in the database across processes.
        headers = {"Retry-After": str(error.retry_after_s)} if error.retry_after_s else {}
        return Response(
            {"detail": error.errors["non_field_errors"][0]},
            status=status.HTTP_429_TOO_MANY_REQUESTS,
            headers=headers,
        )
    if isinstance(error, services.SubmissionError):
        # A submission has two fields: the hardware, and the config whose fields the rest name,
        # in the words the submit form uses (forms.worded), not pydantic's.
        errors = {
            name: [worded(message) for message in messages]
            for name, messages in error.errors.items()
        }
        body: dict[str, object] = (
            {"hardware": errors.pop("hardware")} if "hardware" in errors else {}
        )
        if errors:
            body["config"] = errors
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(error, services.DuplicateUploadError):
        return Response(error.errors, status=status.HTTP_409_CONFLICT)
    return Response(error.errors, status=status.HTTP_400_BAD_REQUEST)


def comparison_refusal(error: selectors.ComparisonRefused) -> Response:
    """Compare's refusals, under the query's `keys` field: unknown keys are a 404."""
    if isinstance(error, selectors.UnknownKeys):
        return Response(
            {"keys": [f"unknown config keys: {', '.join(error.keys)}"]},
            status=status.HTTP_404_NOT_FOUND,
        )
    return Response(
        {"keys": ["give two to four distinct config keys"]}, status=status.HTTP_400_BAD_REQUEST
    )


def exception_handler(error: Exception, context: dict) -> Response:
    """Every error as JSON: DRF's own, the services' and compare's refusals, and anything
    unexpected (logged)."""
    if isinstance(error, services.ServiceError):
        return service_refusal(error)
    if isinstance(error, selectors.ComparisonRefused):
        return comparison_refusal(error)
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
