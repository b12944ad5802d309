"""The front page's speedup chart and the /hardware/ comparison (selectors.board.charts): each
bar's and each best speedup's colour comes with the verdicts' word from the selector, never
decided in the page."""

from __future__ import annotations

import pytest

from leaderboard import selectors, verdicts
from tests.support.measured_configs import measure_three_ways


@pytest.fixture
def measured(user, hardware, models, make_result, enqueued):
    return measure_three_ways(user, hardware, models, make_result)


def test_the_speedup_chart_gives_each_bar_the_verdicts_word_on_it(measured, hardware):
    chart = selectors.speedup_chart(hardware=hardware.slug)

    found = {point["label"]: point for point in chart["points"]}
    assert found["draft-simple · self-draft · n_max 4"]["verdict"] == verdicts.advice.FASTER
    assert found["draft-simple · self-draft · n_max 5"]["verdict"] == verdicts.advice.SLOWER
    assert found["draft-simple · self-draft · n_max 2"]["verdict"] == verdicts.advice.UNCLEAR
    for point in chart["points"]:
        interval = (point["ci95_low"], point["ci95_high"])
        assert point["verdict"] == verdicts.against_baseline(interval, point["speedup"])


def test_the_hardware_comparison_gives_the_best_speedup_its_verdict(measured, hardware):
    comparison = selectors.hardware_comparison_for(target="tiny-qwen3")

    [row] = comparison["rows"]
    # The best speedup is n_max 4's, whose whole interval is above 1.
    assert row["speedup_key"] == measured[4].key
    assert row["speedup_verdict"] == verdicts.advice.FASTER
