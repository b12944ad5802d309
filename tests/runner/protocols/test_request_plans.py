"""Turning a protocol into requests (runner.protocols.plans): exact prompts, and a paired run's
rounds in ABBA order."""

from runner import protocols
from runner.config import parse_config


def test_sweep_prompts_have_exact_lengths_and_are_reproducible():
    config = parse_config(
        {
            "target_model": "t.gguf",
            "protocol": {"name": "depth", "depths": [64, 128], "output_tokens": 8, "requests": 2},
        }
    )
    plan = protocols.plan_requests(config, vocab_size=256)
    assert [len(r.prompt) for r in plan] == [64, 64, 64, 128, 128, 128]
    assert [r.phase for r in plan[:3]] == ["warmup", "measure", "measure"]
    assert plan == protocols.plan_requests(config, vocab_size=256)
    assert all(64 <= token < 255 for r in plan for token in r.prompt)


# A paired run's rounds.


def test_rounds_alternate_which_side_goes_first_and_always_end_on_the_baseline():
    assert protocols.round_orders(1) == [("speculative", "baseline")]
    assert protocols.round_orders(2) == [("baseline", "speculative"), ("speculative", "baseline")]
    assert protocols.round_orders(4) == [
        ("baseline", "speculative"),
        ("speculative", "baseline"),
        ("baseline", "speculative"),
        ("speculative", "baseline"),
    ]
    assert protocols.baseline_sessions(1) == 1
    assert protocols.baseline_sessions(2) == 2
    assert protocols.baseline_sessions(4) == 3


def test_each_depth_is_split_across_the_rounds_and_a_round_with_nothing_is_dropped():
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf",
         "protocol": {"name": "context-sweep", "points": [
             {"input_tokens": 8, "output_tokens": 4, "requests": 3, "warmup": 1},
             {"input_tokens": 16, "output_tokens": 4, "requests": 1, "warmup": 1}]}}
    )  # fmt: skip
    plan = protocols.plan_requests(config, vocab_size=2000)
    # Depth 0's measured requests are 0, 1, 2 and depth 1's is 3.
    assert protocols.split_rounds(plan, 2) == [[0, 1, 3], [2]]
    assert protocols.split_rounds(plan, 5) == [[0, 3], [1], [2]]


def test_a_concurrency_level_s_waves_stay_whole_in_their_round():
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf",
         "protocol": {"name": "concurrency", "levels": [1, 2], "rounds": 3, "warmup": 1,
                      "input_tokens": 8, "output_tokens": 4}}
    )  # fmt: skip
    plan = protocols.plan_requests(config, vocab_size=2000)
    level_two = [spec for spec in plan if spec.concurrency == 2]
    assert protocols.split_rounds(level_two, 2) == [[0, 1, 2, 3], [4, 5]]
