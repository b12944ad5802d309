"""What the runner writes, for tests that check it sets every field of its result."""

from __future__ import annotations

import copy
from typing import Any

from runner.results import LEGACY_SUMMARY_FIELDS


def without_legacy_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A result's plain data without the summary fields only older files carry
    (``runner.results.LEGACY_SUMMARY_FIELDS``): the runner never sets them, so they dump as
    null and ``exclude_unset=True`` leaves them out. Fails if one of them holds a figure."""
    data = copy.deepcopy(data)
    sections = [data] + ([data["baseline"]] if data.get("baseline") else [])
    for section in sections:
        for name in LEGACY_SUMMARY_FIELDS:
            assert section["summary"].pop(name) is None, f"the runner wrote {name}"
    return data
