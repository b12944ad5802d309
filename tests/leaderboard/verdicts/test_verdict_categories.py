"""Categories verdicts: an interval over a category's prompts, anecdotal below three."""

from __future__ import annotations

import pytest

from leaderboard.verdicts.categories import by_category, category_figures


def request(point: int, prompt: str, drafted: int, accepted: int, decode: float) -> dict:
    return {
        "phase": "measure",
        "point": point,
        "prompt_sha256": prompt,
        "draft_n": drafted,
        "draft_n_accepted": accepted,
        "decode_tokens_per_second": decode,
    }


def test_each_category_has_an_interval_over_its_prompts_and_few_prompts_are_anecdotal():
    requests = [
        request(0, "a", 100, 80, 50.0),
        request(0, "a", 100, 70, 52.0),  # a repeat of prompt a: pooled into one prompt's rate
        request(0, "b", 100, 60, 48.0),
        request(0, "c", 100, 40, 45.0),
        request(1, "d", 100, 90, 60.0),
        request(1, "e", 100, 10, 40.0),
        {"phase": "warmup", "point": 1, "prompt_sha256": "w", "draft_n": 9, "draft_n_accepted": 9},
    ]
    figures = category_figures(requests)
    code = figures[0]
    assert code.prompts == 3 and not code.anecdotal
    assert code.acceptance.mean == pytest.approx((0.75 + 0.6 + 0.4) / 3)
    low, high = code.acceptance_interval
    assert low < code.acceptance.mean < high
    assert figures[1].prompts == 2 and figures[1].anecdotal
    named = by_category([{"category": "code"}, {"category": "math"}], figures)
    assert set(named) == {"code", "math"} and named["math"].anecdotal


def test_twenty_prompts_a_category_narrow_the_interval_and_keep_each_category_apart():
    # Suite 2's size: twenty prompts a category, each prompt's acceptance its own sample value.
    rates = [0.35, 0.45, 0.55, 0.65] * 5
    many = [request(0, f"p{i}", 100, round(rate * 100), 50.0) for i, rate in enumerate(rates)]
    many += [request(1, f"q{i}", 100, 20, 40.0 + i) for i in range(20)]
    few = [request(0, f"p{i}", 100, round(rate * 100), 50.0) for i, rate in enumerate(rates[:4])]
    wide, narrow = category_figures(few)[0], category_figures(many)[0]
    assert narrow.prompts == 20 and not narrow.anecdotal
    assert narrow.acceptance.mean == pytest.approx(0.5) == wide.acceptance.mean
    low, high = narrow.acceptance_interval
    assert low < 0.5 < high
    assert high - low < (wide.acceptance_interval[1] - wide.acceptance_interval[0]) / 2
    other = category_figures(many)[1]
    assert other.prompts == 20 and other.acceptance.mean == pytest.approx(0.2)
    # Every prompt at the same rate: no spread, and the interval says nothing wider.
    assert other.acceptance_interval in (None, (pytest.approx(0.2), pytest.approx(0.2)))
    assert other.decode.n == 20
