"""Degenerate output (runner.stats.is_degenerate): loops of long cycles, collapse, early stops."""

import random

from runner.engines.measure import SpecCounters, build_record, repeating_tail
from runner.protocols import RequestSpec
from runner.results import RequestRecord
from runner.stats import DEGENERATE_DISTINCT_RATIO, is_degenerate, pooled_figures

OUTPUT_TOKENS = 1500


def varied_text(length: int, *, seed: int) -> list[int]:
    """Token ids shaped like prose: Zipf-like word frequencies, frequent short phrases, no loop."""
    rng = random.Random(seed)
    vocabulary = list(range(1000, 33000))
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    phrases = [rng.choices(vocabulary, weights, k=rng.randint(2, 6)) for _ in range(40)]
    tokens: list[int] = []
    while len(tokens) < length:
        if rng.random() < 0.2:
            tokens += rng.choice(phrases)
        else:
            tokens += rng.choices(vocabulary, weights, k=rng.randint(1, 8))
    return tokens[:length]


def record_of(tokens: list[int], *, requested: int = OUTPUT_TOKENS) -> dict:
    """The per-request record the runner builds for a response that generated these tokens."""
    spec = RequestSpec("measure", 0, None, requested, "prompt", 1)
    timings = {"prompt_n": 20, "prompt_ms": 2.0, "predicted_n": len(tokens), "predicted_ms": 900.0}
    return build_record(
        spec=spec, timings=timings, tokens=tokens, wall_s=1.0, ttft_s=0.01, counters=SpecCounters()
    )


def looping(prefix: int, period: int, *, seed: int = 7) -> list[int]:
    """OUTPUT_TOKENS tokens: some varied text, then one cycle of distinct tokens over and over."""
    cycle = varied_text(period, seed=seed + 1)
    tokens = varied_text(prefix, seed=seed)
    while len(tokens) < OUTPUT_TOKENS:
        tokens += cycle
    return tokens[:OUTPUT_TOKENS]


def test_1500_tokens_looping_a_170_token_cycle_are_degenerate():
    record = record_of(looping(prefix=300, period=170))
    # The distinct 4-gram ratio alone missed it: a long cycle keeps the ratio well above its bound.
    assert record["distinct_4gram_ratio"] > 2 * DEGENERATE_DISTINCT_RATIO
    assert (record["repeat_period"], record["repeated_tail_tokens"]) == (170, 1200)
    assert is_degenerate([record])


def test_an_output_that_is_one_cycle_from_its_first_token_is_degenerate():
    # Up to the longest cycle that 1,500 tokens can repeat three times over.
    for period in (1, 150, 200, 500):
        record = record_of(looping(prefix=0, period=period))
        assert record["repeat_period"] == period
        assert is_degenerate([record]), period


def test_a_passage_written_twice_is_not_yet_a_loop():
    passage = varied_text(500, seed=5)
    record = record_of(varied_text(500, seed=4) + passage * 2)
    assert record["repeat_period"] == 500 and not is_degenerate([record])


def test_normal_varied_text_is_not_degenerate():
    records = [record_of(varied_text(OUTPUT_TOKENS, seed=seed)) for seed in range(5)]
    assert all(record["repeated_tail_tokens"] < 50 for record in records)
    assert not is_degenerate(records)
    assert not pooled_figures(records)["degenerate"]


def test_a_short_loop_at_the_very_end_is_not_degenerate():
    # Three repeats of a 20-token phrase closing 1,500 tokens of text: a tail, not a collapse.
    phrase = varied_text(20, seed=3)
    tokens = varied_text(OUTPUT_TOKENS - 60, seed=2) + phrase * 3
    record = record_of(tokens)
    assert record["repeat_period"] == 20 and record["repeated_tail_tokens"] >= 60
    assert not is_degenerate([record])


def test_one_looping_request_makes_the_run_degenerate():
    records = [record_of(varied_text(OUTPUT_TOKENS, seed=seed)) for seed in range(4)]
    records.append(record_of(looping(prefix=300, period=170)))
    assert is_degenerate(records) and pooled_figures(records)["degenerate"]


def test_an_early_stop_is_still_degenerate():
    record = record_of(varied_text(700, seed=1))
    assert record["stopped_early"] and is_degenerate([record])


def test_collapsed_output_is_still_degenerate():
    assert is_degenerate([record_of([42, 43, 44] * 500)])


def test_records_without_the_repeating_tail_are_judged_by_the_older_rules():
    record = record_of(looping(prefix=300, period=170))
    older = {k: v for k, v in record.items() if k not in ("repeat_period", "repeated_tail_tokens")}
    assert not is_degenerate([older])
    assert is_degenerate([older | {"stopped_early": True}])


def test_the_repeating_tail_is_the_longest_one_and_its_shortest_cycle():
    assert repeating_tail([1, 2, 3] * 10) == (3, 30)
    assert repeating_tail([9, 8, 7, 6, 5]) == (None, 0)
    assert repeating_tail([]) == (None, 0)
    # A cycle longer than the search window is not looked for.
    assert repeating_tail(list(range(600)) * 2) == (None, 0)


def test_the_result_model_carries_the_fields_a_site_rederives_degenerate_from():
    record = record_of(looping(prefix=300, period=170))
    stored = RequestRecord.model_validate(
        {k: v for k, v in record.items() if k != "output_tokens"}
        | {"index": 0, "first_divergence": None}
    ).model_dump()
    assert is_degenerate([stored])
