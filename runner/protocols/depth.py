"""The depth protocol, the cheap variant of the sweep: input length varies, output length is
fixed, on exact token-id prompts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, field_validator

from runner.protocols.base import (
    MAX_REQUEST_TOKENS,
    ProtocolBase,
    RequestSpec,
    SweepPoint,
    Tokens,
    depths_label,
    points_costs,
    points_plan,
    stored_sizes,
    wholes,
)

if TYPE_CHECKING:
    from runner.config import BenchmarkConfig


class DepthProtocol(ProtocolBase):
    """The cheap variant of the sweep: input length varies, output length is fixed."""

    name: Literal["depth"] = "depth"
    depths: list[Annotated[int, Field(strict=True)]] = Field(
        default=[512, 4096, 12288, 36864], min_length=1, max_length=16
    )
    output_tokens: int = Field(strict=True, default=256, ge=1, le=MAX_REQUEST_TOKENS)
    requests: int = Field(strict=True, default=5, ge=1, le=200)
    warmup: int = Field(strict=True, default=1, ge=0, le=20)
    seed: int = Field(strict=True, default=42, ge=0, le=2**31 - 1)

    @field_validator("depths")
    @classmethod
    def _depths_in_range(cls, depths: list[int]) -> list[int]:
        for depth in depths:
            if not 1 <= depth <= MAX_REQUEST_TOKENS:
                raise ValueError(f"depth {depth} must lie between 1 and {MAX_REQUEST_TOKENS}")
        return depths

    def required_context(self) -> int:
        return max(self.depths) + self.output_tokens + 16

    @property
    def points(self) -> list[SweepPoint]:
        return [
            SweepPoint(
                input_tokens=depth,
                output_tokens=self.output_tokens,
                requests=self.requests,
                warmup=self.warmup,
            )
            for depth in self.depths
        ]

    def plan(self, config: BenchmarkConfig, *, vocab_size: int) -> list[RequestSpec]:
        return points_plan(self.points, seed=self.seed, config=config, vocab_size=vocab_size)

    def measured_waves_per_point(self) -> int:
        return self.requests

    def token_costs(self) -> tuple[Tokens, Tokens]:
        return points_costs(self.points)

    @classmethod
    def stored_depths(cls, stored: Mapping[str, Any]) -> list[int]:
        return wholes(stored.get("depths"))

    @classmethod
    def workload_label(cls, stored: Mapping[str, Any], *, prompt_set: str = "") -> str:
        """'depth 512–36864 tokens (4 depths), 128 out'."""
        parts = [depths_label("depth", cls.stored_depths(stored))]
        return ", ".join(parts + stored_sizes(stored, ("output_tokens", "out")))
