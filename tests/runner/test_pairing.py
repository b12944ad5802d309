"""Pairing a run with its baseline (runner.pairing): divergence, speedup, lossless."""

import math

import pytest

from runner.pairing import (
    DIVERGED_NOTE,
    SYNTHETIC_NOTE,
    combined_speedup,
    first_divergence,
    lossless_verdict,
    pair_with_baseline,
    same_outputs,
)


def point(mean: float | None) -> dict:
    return {"decode_tokens_per_second": {"mean": mean}, "speedup": None}


def test_first_divergence_is_the_first_differing_token_or_the_shorter_length():
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 9, 3], [1, 2, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2


def test_speedup_across_depths_is_the_geometric_mean_of_each_depths_speedup():
    assert combined_speedup([2.0]) == 2.0
    assert combined_speedup([2.0, 8.0]) == pytest.approx(4.0)
    assert combined_speedup([None, 3.0]) == 3.0
    assert combined_speedup([None]) is None


def test_lossless_means_no_request_diverged_and_synthetic_runs_are_not_judged():
    assert lossless_verdict([None, None], synthetic=False) == (True, None)
    assert lossless_verdict([None, 4], synthetic=False) == (False, DIVERGED_NOTE)
    assert lossless_verdict([None, 4], synthetic=True) == (None, SYNTHETIC_NOTE)


def test_pairing_compares_each_point_and_each_request_with_the_baseline():
    pairing = pair_with_baseline(
        points=[point(30.0), point(20.0)],
        baseline_points=[point(10.0), point(10.0)],
        outputs=[[1, 2, 3], [1, 2, 4]],
        baseline_outputs=[[1, 2, 3], [1, 2, 3]],
        synthetic=False,
    )
    assert pairing.point_speedups == [3.0, 2.0]
    assert pairing.speedup == pytest.approx(math.sqrt(6.0))
    assert pairing.first_divergences == [None, 2]
    assert (pairing.lossless, pairing.lossless_note) == (False, DIVERGED_NOTE)


def test_a_baseline_without_decode_figures_gives_no_speedup():
    pairing = pair_with_baseline(
        points=[point(30.0)],
        baseline_points=[point(None)],
        outputs=[[1]],
        baseline_outputs=[[1]],
        synthetic=False,
    )
    assert pairing.point_speedups == [None] and pairing.speedup is None
    assert pairing.lossless is True


def test_outputs_are_the_same_only_when_every_request_hash_matches():
    assert same_outputs(["a", "b"], ["a", "b"]) is True
    assert same_outputs(["a", "b"], ["a", "c"]) is False
    assert same_outputs([], ["a"]) is None
    assert same_outputs(["a", ""], ["a", "b"]) is None
