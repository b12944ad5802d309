"""The API's JSON: every number finite.

The door refuses NaN and infinities (runner results, uploads, progress), so a stored one is data
written past it: an old row, an admin's edit. JSON has no such numbers, and DRF's strict encoder
would answer 500 on them; this renderer writes them as null, so every resource can always be
shown ("what the site accepts, it can always show")."""

from __future__ import annotations

import math
from typing import Any

from rest_framework.renderers import JSONRenderer


def finite(value: Any) -> Any:
    """`value` with every non-finite float inside it replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


class FiniteJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return super().render(finite(data), accepted_media_type, renderer_context)
