"""When a claimed figure agrees with the figure derived from its evidence, and how either is
shown in a refusal: float noise between two correct computations of one figure, the slack
between the server's clock and the client's, and a figure written as the JSON it came from."""

from __future__ import annotations

import math
from typing import Any

# Float noise between two correct computations of the same figure, never a real difference.
RELATIVE_TOLERANCE = 1e-6
ABSOLUTE_TOLERANCE = 1e-9

# The server's timings (ggml's microsecond clock) lie inside the client's wall time: this much
# slack covers the two clocks' granularity and rounding, never a real contradiction.
CLOCK_SLACK_MS = 1.0
CLOCK_SLACK_SHARE = 1e-3


def close(claimed: float, derived: float) -> bool:
    """Whether two computations of one figure agree within float noise."""
    return math.isclose(claimed, derived, rel_tol=RELATIVE_TOLERANCE, abs_tol=ABSOLUTE_TOLERANCE)


def clock_slack(ms: float) -> float:
    """How far two clocks' readings of ``ms`` may differ without contradicting each other."""
    return CLOCK_SLACK_MS + CLOCK_SLACK_SHARE * ms


def shown(value: Any) -> str:
    """A figure as the JSON it came from: null, true/false, lists element by element."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(shown(item) for item in value) + "]"
    return f"{value:.10g}" if isinstance(value, float) else str(value)
