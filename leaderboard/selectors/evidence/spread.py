"""How acceptance and tau spread over one run's requests, beside their pooled values.

The board's acceptance pools a batch: all accepted draft tokens over all drafted ones. Two
configs with the same pooled 60% can be a steady 60% on every prompt, or 95% on some and 25% on
others; only the requests tell them apart. Everything here is computed from the stored request
records of the measured phase (never from a summary the host sent), so a stored run always has
a spread or plainly none: a request without drafts has no acceptance and is counted apart.
"""

from __future__ import annotations

import math
import statistics

from leaderboard.models import Run

# Ten bins of equal width over [0, 1]; a request at exactly 100% falls in the last.
ACCEPTANCE_BINS = 10


def acceptance_spread(*, run: Run | None) -> dict | None:
    """A run's per-request acceptance histogram and the spread of acceptance and tau.

    {"n": measured requests, "drafted": those with drafts, "without_drafts": the rest,
     "bins": [{"low", "high", "count"}], "acceptance": {min, p10, median, p90, max},
     "tau": the same over the drafted requests' tau (None where none has one)};
    None without a run or without a single drafted request.
    """
    if run is None:
        return None
    rows = list(
        run.requests.filter(phase="measure").values_list("draft_n", "draft_n_accepted", "tau")
    )
    drafted = [(n, accepted, tau) for n, accepted, tau in rows if n > 0]
    if not drafted:
        return None
    # A record cannot accept more than it drafted (the door refuses it); clamp all the same, so
    # a stored row can never draw a bin past 100%.
    rates = [min(accepted / n, 1.0) for n, accepted, _ in drafted]
    counts = [0] * ACCEPTANCE_BINS
    for rate in rates:
        counts[min(int(rate * ACCEPTANCE_BINS), ACCEPTANCE_BINS - 1)] += 1
    taus = [tau for _, _, tau in drafted if tau is not None and math.isfinite(tau)]
    return {
        "n": len(rows),
        "drafted": len(drafted),
        "without_drafts": len(rows) - len(drafted),
        "bins": [
            {"low": i / ACCEPTANCE_BINS, "high": (i + 1) / ACCEPTANCE_BINS, "count": count}
            for i, count in enumerate(counts)
        ],
        "acceptance": _spread(rates),
        "tau": _spread(taus) if taus else None,
    }


def _spread(values: list[float]) -> dict:
    """Smallest, 10th percentile, median, 90th percentile and largest (inclusive method: the
    percentiles lie within the values; one value is all five)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        low = high = ordered[0]
    else:
        deciles = statistics.quantiles(ordered, n=10, method="inclusive")
        low, high = deciles[0], deciles[-1]
    return {
        "min": ordered[0],
        "p10": low,
        "median": statistics.median(ordered),
        "p90": high,
        "max": ordered[-1],
    }
