"""Intervals: a row's 95% interval, and the one test of how two lie against each other.

The board's ties with the leader and the n_max page's "beats" findings both ask
`interval_relation`: "overlap" is a tie, "above" is a clear win, and a row without an interval
(missing, or fewer than two requests) ties with nothing and beats nothing. `overlaps` is the
same test for callers that hold two bare intervals.
"""

from __future__ import annotations

Interval = tuple[float, float]


def interval_of(low: float | None, high: float | None, n: int | None) -> Interval | None:
    """A 95% interval, or None where it is missing or rests on fewer than two requests."""
    if low is None or high is None or n is None or n < 2:
        return None
    return low, high


def interval_relation(interval: Interval | None, other: Interval | None) -> str | None:
    """How an interval lies against another: "overlap", "above", "below", or None if either is
    missing. A tie is "overlap"; one row clearly beats another only when it is "above"."""
    if interval is None or other is None:
        return None
    low, high = interval
    other_low, other_high = other
    if low > other_high:
        return "above"
    if high < other_low:
        return "below"
    return "overlap"


def overlaps(low: float | None, high: float | None, other_low, other_high) -> bool:
    """Whether two 95% intervals share any value; a missing interval overlaps nothing."""
    if None in (low, high, other_low, other_high):
        return False
    return interval_relation((low, high), (other_low, other_high)) == "overlap"
