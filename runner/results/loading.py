"""A result read at the edge (``load_result``): validated from JSON text or parsed data, brought
into the current decode convention, and its validation errors said in one line
(``result_error_message``) or by field (``result_field_errors``)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from runner.errors import ResultError
from runner.evidence import in_current_convention
from runner.results.result import BenchmarkResult

SHOWN_ERRORS = 3


def result_error_message(error: ValidationError) -> str:
    """A result's validation errors as one line: the first few, each with its field path."""
    items = error.errors(include_url=False)
    parts = []
    for item in items[:SHOWN_ERRORS]:
        location = ".".join(str(part) for part in item["loc"])
        message = " ".join(item["msg"].removeprefix("Value error, ").split())
        parts.append(f"{location}: {message}" if location else message)
    more = f" (and {len(items) - SHOWN_ERRORS} more)" if len(items) > SHOWN_ERRORS else ""
    return "invalid result: " + " | ".join(parts) + more


def result_field_errors(error: ValidationError) -> dict[str, list[str]]:
    """Every validation error, grouped by the top-level field it is in, with its whole path."""
    errors: dict[str, list[str]] = {}
    for item in error.errors(include_url=False):
        location = [str(part) for part in item["loc"]]
        message = " ".join(item["msg"].removeprefix("Value error, ").split())
        # A whole-result check names its own fields in its message.
        shown = f"{'.'.join(location)}: {message}" if location else message
        errors.setdefault(location[0] if location else "non_field_errors", []).append(shown)
    return errors


def load_result(data: bytes | str | dict[str, Any]) -> BenchmarkResult:
    """Validate a result from JSON text or parsed JSON data; raise ResultError in one line.

    A result written before the decode convention (``runner.stats.decode_rate``) is checked as
    it was written, then returned with its decode figures derived again under the convention
    (``runner.evidence.in_current_convention``), so that whatever is stored or shown from it
    counts decode tok/s one way."""
    try:
        if isinstance(data, bytes | str):
            result = BenchmarkResult.model_validate_json(data)
        else:
            result = BenchmarkResult.model_validate(data)
        if result.written_before_the_convention():
            written = result.model_dump(mode="json", exclude_unset=True)
            result = BenchmarkResult.model_validate(in_current_convention(written))
        return result
    except ValidationError as error:
        raise ResultError(result_error_message(error), result_field_errors(error)) from None
