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
