"""How a 95% interval of a speed reads on the pages: as it is, "no interval" when there is none,
and an interval that reached below zero says that its batch cannot place its mean."""

from __future__ import annotations

import pytest

from leaderboard.templatetags.specboard import interval


@pytest.mark.parametrize(
    ("low", "high", "text"),
    [
        (95.25, 104.75, "95.2 – 104.8"),
        (1200.0, 1300.0, "1,200.0 – 1,300.0"),
        (0.0, 12.0, "0.0 – 12.0"),
        (-50.8, 115.3, "0.0 – 115.3 (too few requests to place the mean)"),
        (None, 12.0, "no interval"),
        (12.0, None, "no interval"),
    ],
)
def test_an_interval_reads_as_what_it_says(low, high, text):
    assert interval(low, high) == text


@pytest.mark.parametrize("stored", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_stored_figure_shows_as_a_dash_never_as_nan_or_inf(stored):
    from leaderboard.templatetags.run_display import memory_text
    from leaderboard.templatetags.specboard import number, percent, times

    assert number(stored) == percent(stored) == times(stored) == "–"
    assert interval(stored, 10.0) == "no interval" and memory_text(stored) == ""
