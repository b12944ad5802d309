"""Whether a result's own baseline agrees with the site's measurements of that baseline.

A speedup is the site's: its denominator is a baseline batch measured on the same hardware kind,
engine release, workload, tok/s definition, backend and build flags (`services.pairing`). A
result that brings its own baseline (measured in the same invocation, preferred for pairing) is
compared with the site's other batches of that baseline config: where its 95% interval (its
mean, without spread) lies wholly outside the span of theirs (the lowest of their lower ends to
the highest of their upper ends; a batch without spread counts by its mean), the two disagree
beyond their intervals. The row then says so, takes the site's batch as its denominator and is
kept off every ranking and answer until they agree (a measurement that bridges them).
"""

from __future__ import annotations

from collections.abc import Sequence

from leaderboard.verdicts.statistics import Interval, Sample, t_interval


def _span(sample: Sample) -> Interval:
    return t_interval(sample) or (sample.mean, sample.mean)


def _site_span(samples: Sequence[Sample]) -> Interval:
    """The interval from the lowest to the highest end of the site's batches' intervals."""
    spans = [_span(sample) for sample in samples]
    return min(s[0] for s in spans), max(s[1] for s in spans)


def baseline_dispute(own: Sample | None, site: Sequence[Sample | None]) -> str:
    """Why a result's own baseline batch disagrees with the site's other batches of the same
    baseline config, in words; empty where they agree or either side is unknown."""
    known = [sample for sample in site if sample is not None]
    if own is None or not known:
        return ""
    low, high = _span(own)
    site_low, site_high = _site_span(known)
    if site_low <= high and low <= site_high:
        return ""
    measurements = "measurement" if len(known) == 1 else "measurements"
    return (
        f"its own baseline, {own.mean:,.1f} tok/s (95% CI {low:,.1f}–{high:,.1f}), disagrees "
        f"with the site's {len(known)} {measurements} of it ({site_low:,.1f}–{site_high:,.1f} "
        "tok/s): not ranked until they agree"
    )
