"""Request parsers with size limits: an oversized body is a 413 before anything is read."""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework import exceptions, parsers, status


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


def declared_length(parser_context: dict | None) -> int:
    request = (parser_context or {}).get("request")
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
    except ValueError:
        raise exceptions.ParseError("Content-Length is not a number.") from None


def refuse_oversized(parser_context: dict | None, limit: int) -> None:
    if declared_length(parser_context) > limit:
        raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")


class LimitedJSONParser(parsers.JSONParser):
    """JSON bodies up to SPECBOARD_MAX_JSON_BYTES; deep nesting and lone surrogates are 400s."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.SPECBOARD_MAX_JSON_BYTES
        refuse_oversized(parser_context, limit)
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        return parse_json_bytes(raw)


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def parse_json_bytes(raw: bytes) -> object:
    """Strict JSON (no NaN or Infinity) from bytes, or a ParseError that says what is wrong."""
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
        # Lone surrogates decode from \\ud800 escapes but cannot be stored as UTF-8.
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise exceptions.ParseError("JSON parse error - nested too deeply.") from None
    except UnicodeError:
        raise exceptions.ParseError("JSON parse error - not valid UTF-8 text.") from None
    except ValueError as error:
        raise exceptions.ParseError(f"JSON parse error - {error}") from None
    return data


class LimitedMultiPartParser(parsers.MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        refuse_oversized(parser_context, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        return super().parse(stream, media_type, parser_context)


class LimitedFormParser(parsers.FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        refuse_oversized(parser_context, settings.SPECBOARD_MAX_JSON_BYTES)
        return super().parse(stream, media_type, parser_context)
