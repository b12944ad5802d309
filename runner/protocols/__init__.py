"""The protocols: how a config is measured. One module per protocol holds everything it is (its
schema, the requests it plans, what they cost, its own figures and evidence checks, its
workload label); ``PROTOCOLS`` below is the registry, and ``Protocol`` the discriminated union
that ``runner.config.BenchmarkConfig`` holds. ``base`` holds what they share, ``plans`` the
paired run's rounds over a plan, ``budget`` a run's and a job's token budget.

Adding a protocol is a module here and its line in ``PROTOCOLS`` and ``Protocol``
(docs/PROTOCOLS.md).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from runner.protocols.base import (
    MAX_CONTEXT,
    MAX_REQUEST_TOKENS,
    ProtocolBase,
    RequestSpec,
    SweepPoint,
    text_tokens,
)
from runner.protocols.budget import (
    job_token_budget,
    measures_own_baseline,
    paired_baseline_sessions,
    token_budget,
)
from runner.protocols.categories import CategoriesProtocol
from runner.protocols.concurrency import (
    MAX_CONCURRENCY,
    MAX_CONCURRENCY_LEVELS,
    ConcurrencyProtocol,
)
from runner.protocols.context_sweep import ContextSweepProtocol
from runner.protocols.depth import DepthProtocol
from runner.protocols.output_length import MAX_OUTPUT_LENGTHS, OutputLengthProtocol
from runner.protocols.plans import (
    PAIRED_ROUNDS,
    Side,
    baseline_sessions,
    plan_requests,
    repeated_prompt,
    round_orders,
    split_rounds,
    waves,
)
from runner.protocols.quality import QualityProtocol
from runner.protocols.quick import QUICK_PROMPT, QuickProtocol

# The registry: every protocol by its name, in the order the site lists them.
PROTOCOLS: dict[str, type[ProtocolBase]] = {
    "quick": QuickProtocol,
    "context-sweep": ContextSweepProtocol,
    "depth": DepthProtocol,
    "concurrency": ConcurrencyProtocol,
    "categories": CategoriesProtocol,
    "output-length": OutputLengthProtocol,
    "quality": QualityProtocol,
}

# The same protocols as the config's field: pydantic picks the class by ``name``.
Protocol = Annotated[
    QuickProtocol
    | ContextSweepProtocol
    | DepthProtocol
    | ConcurrencyProtocol
    | CategoriesProtocol
    | OutputLengthProtocol
    | QualityProtocol,
    Field(discriminator="name"),
]


def protocol_class(name: str) -> type[ProtocolBase] | None:
    """The protocol of that name, None for a name the runner does not know (a seed-kit import's
    "seed-csv")."""
    return PROTOCOLS.get(name)


def stored_canonical(data: dict[str, Any]) -> dict[str, Any]:
    """A stored result's config as today's schema reads it (the same key): its protocol through
    the protocol's ``read_stored`` (a categories protocol that names no suite is the first
    suite's)."""
    protocol = data.get("protocol")
    name = protocol.get("name") if isinstance(protocol, dict) else None
    if isinstance(protocol, dict) and isinstance(name, str) and (found := protocol_class(name)):
        read = found.read_stored(protocol)
        return data if read is protocol else data | {"protocol": read}
    return data


__all__ = [
    "MAX_CONCURRENCY",
    "MAX_CONCURRENCY_LEVELS",
    "MAX_CONTEXT",
    "MAX_OUTPUT_LENGTHS",
    "MAX_REQUEST_TOKENS",
    "PAIRED_ROUNDS",
    "PROTOCOLS",
    "QUICK_PROMPT",
    "CategoriesProtocol",
    "ConcurrencyProtocol",
    "ContextSweepProtocol",
    "DepthProtocol",
    "OutputLengthProtocol",
    "Protocol",
    "ProtocolBase",
    "QualityProtocol",
    "QuickProtocol",
    "RequestSpec",
    "Side",
    "SweepPoint",
    "baseline_sessions",
    "job_token_budget",
    "measures_own_baseline",
    "paired_baseline_sessions",
    "plan_requests",
    "protocol_class",
    "repeated_prompt",
    "round_orders",
    "split_rounds",
    "stored_canonical",
    "text_tokens",
    "token_budget",
    "waves",
]
