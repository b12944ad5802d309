"""What a protocol will cost in tokens, warm-ups included: the token budget of a run and of a job.

The budget follows the plans (``runner.protocols.plans``) without building them: the measured
requests once per side, and the warm-ups once per engine session the round order gives each side
(``paired_baseline_sessions``). The service holds a user's allowance to ``job_token_budget``; the
runner records ``token_budget`` in a result's provenance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runner.prompts import load_suite
from runner.protocols.plans import (
    PAIRED_ROUNDS,
    baseline_sessions,
    category_prompts,
    concurrency_suite_prompts,
    text_tokens,
)
from runner.protocols.schema import (
    CategoriesProtocol,
    ConcurrencyProtocol,
    Protocol,
    QualityProtocol,
    QuickProtocol,
)
from runner.quality import tasks as quality_tasks
from runner.quality import warmup_tasks as quality_warmups

if TYPE_CHECKING:
    # Only a type here: runner.config imports the protocol schema from this package.
    from runner.config import BenchmarkConfig


def _measured_waves_per_point(protocol: Protocol) -> int:
    # The most measured waves any one point of the protocol has: what split_rounds can split.
    if isinstance(protocol, QuickProtocol):
        return protocol.runs
    if isinstance(protocol, ConcurrencyProtocol):
        return protocol.rounds
    if isinstance(protocol, CategoriesProtocol):
        return protocol.prompts_per_category
    if isinstance(protocol, QualityProtocol):
        return protocol.tasks
    return max(point.requests for point in protocol.points)


def paired_baseline_sessions(config: BenchmarkConfig, rounds: int = PAIRED_ROUNDS) -> int:
    """Engine sessions the paired baseline takes per stage, each with its own warm-ups."""
    return baseline_sessions(min(rounds, _measured_waves_per_point(config.protocol)))


Tokens = tuple[int, int, int]  # requests, prompt tokens, generated tokens


def _warmup_and_measured(protocol: Protocol) -> tuple[Tokens, Tokens]:
    # What the protocol's warm-ups cost, then what its measured requests cost.
    if isinstance(protocol, QuickProtocol):
        each = (1, text_tokens(protocol.prompt), protocol.n_predict)
        return _times(each, protocol.warmup), _times(each, protocol.runs)
    if isinstance(protocol, ConcurrencyProtocol) and protocol.suite_pool:
        # The plan's order: per level, its warm-up waves, then its measured ones.
        texts, warmups, measured = iter(concurrency_suite_prompts(protocol)), [], []
        for level in protocol.levels:
            warmups += [next(texts) for _ in range(level * protocol.warmup)]
            measured += [next(texts) for _ in range(level * protocol.rounds)]
        return _texts(warmups, protocol.output_tokens), _texts(measured, protocol.output_tokens)
    if isinstance(protocol, ConcurrencyProtocol):
        each = (1, protocol.input_tokens, protocol.output_tokens)
        requests = sum(protocol.levels)
        return _times(each, requests * protocol.warmup), _times(each, requests * protocol.rounds)
    if isinstance(protocol, CategoriesProtocol):
        warmups = list(load_suite(protocol.suite).warmup[: protocol.warmup])
        measured = [text for _, _, text in category_prompts(protocol)]
        return _texts(warmups, protocol.output_tokens), _texts(measured, protocol.output_tokens)
    if isinstance(protocol, QualityProtocol):
        seed, kinds = protocol.task_seed, protocol.kinds
        warmup_prompts = [
            t.prompt for t in quality_warmups(seed=seed, count=protocol.warmup, kinds=kinds)
        ]
        task_prompts = [
            t.prompt for t in quality_tasks(seed=seed, count=protocol.tasks, kinds=kinds)
        ]
        return _texts(warmup_prompts, protocol.max_tokens), _texts(
            task_prompts, protocol.max_tokens
        )
    points = protocol.points
    return (
        (
            sum(p.warmup for p in points),
            sum(p.warmup * p.input_tokens for p in points),
            sum(p.warmup * p.output_tokens for p in points),
        ),
        (
            sum(p.requests for p in points),
            sum(p.requests * p.input_tokens for p in points),
            sum(p.requests * p.output_tokens for p in points),
        ),
    )


def _texts(texts: list[str], output_tokens: int) -> Tokens:
    return len(texts), sum(text_tokens(text) for text in texts), len(texts) * output_tokens


def _times(each: Tokens, count: int) -> Tokens:
    return (each[0] * count, each[1] * count, each[2] * count)


def token_budget(
    config: BenchmarkConfig, *, with_baseline: bool = False, rounds: int = PAIRED_ROUNDS
) -> dict[str, int]:
    """Prompt and generated tokens the protocol will cost, warm-ups included.

    With the baseline, its measured requests once more and its warm-ups once per engine session
    the paired rounds give it (``paired_baseline_sessions``: two for the default two rounds).
    """
    warmup, measured = _warmup_and_measured(config.protocol)
    sessions = paired_baseline_sessions(config, rounds) if with_baseline else 0
    requests, prompt_tokens, generated = (
        w * (1 + sessions) + m * (2 if with_baseline else 1)
        for w, m in zip(warmup, measured, strict=True)
    )
    return {
        "requests": requests,
        "prompt_tokens": prompt_tokens,
        "generated_tokens": generated,
        "total_tokens": prompt_tokens + generated,
    }


def measures_own_baseline(*, speculative: bool, synthetic: bool) -> bool:
    """Whether a job runs its config's paired baseline in the same runner invocation.

    A speculative config with its own drafting does: only a baseline measured beside it can take
    its top-2 margins where the outputs diverge (runner.fidelity), so its fidelity is graded.
    Synthetic acceptance claims nothing about output, so it shares one baseline job instead.
    The service asks this of a stored config (services.jobs), the budget below of a schema one.
    """
    return speculative and not synthetic


def job_token_budget(config: BenchmarkConfig) -> dict[str, int]:
    """What a job of this config costs: with its paired baseline when it measures one beside it
    (`measures_own_baseline`)."""
    with_baseline = measures_own_baseline(
        speculative=config.is_speculative, synthetic=config.is_synthetic
    )
    return token_budget(config, with_baseline=with_baseline)
