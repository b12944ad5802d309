"""What a protocol costs in tokens (runner.protocols.budget), warm-ups included."""

from runner.config import parse_config
from runner.protocols import token_budget


def test_token_budget_counts_warmups_and_the_baseline_warms_up_in_each_of_its_sessions():
    config = parse_config({"target_model": "t.gguf", "protocol": {"name": "context-sweep"}})
    budget = token_budget(config)
    assert budget["requests"] == 48 + 6
    assert budget["generated_tokens"] == 512 * 32 + 4096 * 12 + 12288 * 6 + 36864 * 4
    # Two ABBA rounds: the baseline runs before and after the speculative side, two sessions
    # with their own warm-ups (runner.benchmark._schedule); one round, once.
    warmups = sum(p.warmup * (p.input_tokens + p.output_tokens) for p in config.protocol.points)
    paired = token_budget(config, with_baseline=True)
    assert paired["requests"] == 2 * 48 + 3 * 6
    assert paired["total_tokens"] == 2 * budget["total_tokens"] + warmups
    one_round = token_budget(config, with_baseline=True, rounds=1)
    assert one_round["total_tokens"] == 2 * budget["total_tokens"]
