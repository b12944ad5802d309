"""Categories verdicts: a category's pooled acceptance with its Wilson interval (within [0, 1],
around the figure), anecdotal below three prompts, and no verdict where too little was drafted."""

from __future__ import annotations

import pytest

from leaderboard.verdicts.categories import by_category, category_figures


def request(
    point: int, prompt: str, drafted: int, accepted: int, decode: float, steps: int = 30
) -> dict:
    return {
        "phase": "measure",
        "point": point,
        "prompt_sha256": prompt,
        "draft_n": drafted,
        "draft_n_accepted": accepted,
        "verify_steps": steps,
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
    # Accepted over drafted tokens, pooled over the category's requests: 250 of 400.
    assert code.acceptance == pytest.approx(250 / 400)
    low, high = code.acceptance_interval
    assert 0 <= low < code.acceptance < high <= 1
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
    assert narrow.acceptance == pytest.approx(0.5) == wide.acceptance
    low, high = narrow.acceptance_interval
    assert low < 0.5 < high
    assert high - low < (wide.acceptance_interval[1] - wide.acceptance_interval[0]) / 2
    other = category_figures(many)[1]
    assert other.prompts == 20 and other.acceptance == pytest.approx(0.2)
    low, high = other.acceptance_interval
    assert 0.17 < low < 0.2 < high < 0.23
    assert other.decode.n == 20


@pytest.mark.parametrize(
    ("counts", "shown"),
    [
        # The findings: "66.7%, -17.5% to 68.4%" and "62.5%, -242.7% to 392.7%" were t-intervals
        # over two or three per-prompt rates, neither bounded nor around the figure.
        ([(3, 3), (3, 1), (3, 2)], 6 / 9),
        ([(4, 4), (4, 1)], 5 / 8),
        ([(5, 0), (5, 0)], 0.0),
        ([(5, 5)], 1.0),
    ],
)
def test_a_category_acceptance_interval_stays_within_0_and_1_around_its_figure(counts, shown):
    requests = [
        request(0, f"p{i}", drafted, accepted, 50.0) for i, (drafted, accepted) in enumerate(counts)
    ]
    figures = category_figures(requests)[0]
    assert figures.acceptance == pytest.approx(shown)
    low, high = figures.acceptance_interval
    assert 0.0 <= low <= figures.acceptance <= high <= 1.0


def test_a_category_where_nothing_was_drafted_has_no_acceptance_and_thin_drafting():
    figures = category_figures([request(0, f"p{i}", 0, 0, 50.0, steps=0) for i in range(3)])[0]
    assert figures.acceptance is None and figures.acceptance_interval is None
    assert figures.thin_drafting
    assert figures.evidence.note() == "anecdotal: from 0 drafted tokens"
