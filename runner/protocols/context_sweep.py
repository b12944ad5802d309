"""The context sweep, the seed's sweep: input = output length at several depths, on exact
token-id prompts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from runner.protocols.base import (
    ProtocolBase,
    RequestSpec,
    SweepPoint,
    Tokens,
    depths_label,
    points_costs,
    points_plan,
    wholes,
)

if TYPE_CHECKING:
    from runner.config import BenchmarkConfig


def _seed_sweep() -> list[SweepPoint]:
    return [
        SweepPoint(input_tokens=n, output_tokens=n, requests=r, warmup=w)
        for n, r, w in ((512, 30, 2), (4096, 10, 2), (12288, 5, 1), (36864, 3, 1))
    ]


class ContextSweepProtocol(ProtocolBase):
    """The seed's sweep: input = output length at several depths, token-id prompts."""

    name: Literal["context-sweep"] = "context-sweep"
    points: list[SweepPoint] = Field(default_factory=_seed_sweep, min_length=1, max_length=16)
    seed: int = Field(strict=True, default=42, ge=0, le=2**31 - 1)

    def required_context(self) -> int:
        return max(p.input_tokens + p.output_tokens for p in self.points) + 16

    def plan(self, config: BenchmarkConfig, *, vocab_size: int) -> list[RequestSpec]:
        return points_plan(self.points, seed=self.seed, config=config, vocab_size=vocab_size)

    def measured_waves_per_point(self) -> int:
        return max(point.requests for point in self.points)

    def token_costs(self) -> tuple[Tokens, Tokens]:
        return points_costs(self.points)

    @classmethod
    def stored_depths(cls, stored: Mapping[str, Any]) -> list[int]:
        points = stored.get("points")
        if not isinstance(points, list):
            return []
        return wholes([point.get("input_tokens") for point in points if isinstance(point, dict)])

    @classmethod
    def workload_label(cls, stored: Mapping[str, Any], *, prompt_set: str = "") -> str:
        """'context-sweep 512–36864 tokens (4 depths)': each point's input = output length."""
        return depths_label("context-sweep", cls.stored_depths(stored))
