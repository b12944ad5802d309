"""What a protocol will cost in tokens, warm-ups included: the token budget of a run and of a job.

The budget follows the plans without building them (each protocol's ``token_costs``): the
measured requests once per side, and the warm-ups once per engine session the round order gives
each side (``paired_baseline_sessions``). The service holds a user's allowance to
``job_token_budget``; the runner records ``token_budget`` in a result's provenance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runner.protocols.plans import PAIRED_ROUNDS, baseline_sessions

if TYPE_CHECKING:
    # Only a type here: runner.config imports the protocols from this package.
    from runner.config import BenchmarkConfig


def paired_baseline_sessions(config: BenchmarkConfig, rounds: int = PAIRED_ROUNDS) -> int:
    """Engine sessions the paired baseline takes per stage, each with its own warm-ups."""
    return baseline_sessions(min(rounds, config.protocol.measured_waves_per_point()))


def token_budget(
    config: BenchmarkConfig, *, with_baseline: bool = False, rounds: int = PAIRED_ROUNDS
) -> dict[str, int]:
    """Prompt and generated tokens the protocol will cost, warm-ups included.

    With the baseline, its measured requests once more and its warm-ups once per engine session
    the paired rounds give it (``paired_baseline_sessions``: two for the default two rounds).
    """
    warmup, measured = config.protocol.token_costs()
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
