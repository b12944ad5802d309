"""The protocols: how a config is measured (``schema``), the exact requests each one sends
(``plans``) and what they cost in tokens (``budget``).

The public names of all three are importable from here: ``from runner.protocols import
plan_requests, token_budget``.
"""

from runner.protocols.budget import (
    job_token_budget,
    measures_own_baseline,
    paired_baseline_sessions,
    token_budget,
)
from runner.protocols.plans import (
    PAIRED_ROUNDS,
    RequestSpec,
    Side,
    baseline_sessions,
    category_prompts,
    concurrency_suite_prompts,
    plan_requests,
    repeated_prompt,
    round_orders,
    split_rounds,
    text_tokens,
    waves,
)
from runner.protocols.schema import (
    MAX_CONCURRENCY,
    MAX_CONCURRENCY_LEVELS,
    MAX_CONTEXT,
    MAX_OUTPUT_LENGTHS,
    MAX_REQUEST_TOKENS,
    QUICK_PROMPT,
    CategoriesProtocol,
    ConcurrencyProtocol,
    ContextSweepProtocol,
    DepthProtocol,
    OutputLengthProtocol,
    Protocol,
    QualityProtocol,
    QuickProtocol,
    SweepPoint,
    stored_canonical,
)

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_CONCURRENCY_LEVELS",
    "MAX_CONTEXT",
    "MAX_OUTPUT_LENGTHS",
    "MAX_REQUEST_TOKENS",
    "PAIRED_ROUNDS",
    "QUICK_PROMPT",
    "CategoriesProtocol",
    "ConcurrencyProtocol",
    "ContextSweepProtocol",
    "DepthProtocol",
    "OutputLengthProtocol",
    "Protocol",
    "QualityProtocol",
    "QuickProtocol",
    "RequestSpec",
    "Side",
    "SweepPoint",
    "baseline_sessions",
    "category_prompts",
    "concurrency_suite_prompts",
    "job_token_budget",
    "measures_own_baseline",
    "paired_baseline_sessions",
    "plan_requests",
    "repeated_prompt",
    "round_orders",
    "split_rounds",
    "stored_canonical",
    "text_tokens",
    "token_budget",
    "waves",
]
