"""The one rule for a config's best batch: the highest figure among clean batches."""

from __future__ import annotations

from types import SimpleNamespace

from leaderboard.verdicts.best_run import best_run, is_noisy, run_sample
from leaderboard.verdicts.statistics import Sample


def batch(pk: int, mean: float, stdev: float | None, n: int = 3, degenerate: bool = False):
    return SimpleNamespace(
        pk=pk,
        n=n,
        degenerate=degenerate,
        tps_definition="decode",
        decode_mean=mean,
        decode_stdev=stdev,
        e2e_mean=None,
        e2e_stdev=None,
    )


def pick(runs, protocol="quick"):
    return best_run(runs, sample=lambda r: run_sample(r, protocol=protocol), protocol=protocol)


def test_the_best_batch_is_the_fastest_clean_one():
    runs = [batch(1, 90.0, 1.0), batch(2, 100.0, 1.5), batch(3, 95.0, 1.0)]
    assert pick(runs).pk == 2


def test_a_degenerate_or_noisy_batch_is_never_the_best_while_a_clean_one_exists():
    degenerate = batch(1, 200.0, 1.0, degenerate=True)
    # One request of three took 45 s where the others took 2-3 s: 17.6 tok/s, sd 14.3.
    noisy = batch(2, 17.6, 14.3)
    clean = batch(3, 12.0, 0.5)
    assert pick([degenerate, noisy, clean]).pk == 3
    assert pick([degenerate, noisy]).pk == 2
    assert pick([degenerate]).pk == 1


def test_noisy_is_a_spread_over_half_the_mean_of_repeats_of_one_workload():
    assert is_noisy(Sample(17.6, 14.3, 3), protocol="quick")
    assert not is_noisy(Sample(110.0, 14.1, 2), protocol="quick")
    # A depth sweep or categories batch spreads by design: its spread says nothing of noise.
    assert not is_noisy(Sample(17.6, 14.3, 3), protocol="categories")
    assert not is_noisy(Sample(17.6, None, 1), protocol="quick")


def test_a_concurrency_batch_ranks_by_its_lowest_levels_aggregate_rounds():
    points = [
        {"concurrency": 4, "aggregate_tokens_per_second": {"mean": 400.0, "stdev": 4.0, "n": 3}},
        {"concurrency": 1, "aggregate_tokens_per_second": {"mean": 150.0, "stdev": 2.0, "n": 3}},
    ]
    sample = run_sample(batch(1, 999.0, 1.0), points=points, protocol="concurrency")
    assert sample == Sample(150.0, 2.0, 3)
