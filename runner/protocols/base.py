"""What every protocol is made of: the base class each protocol module subclasses, the request
a plan is a list of (``RequestSpec``), the bounds every protocol shares and the token-id prompts.

A protocol is one pydantic model (its schema, part of the benchmark config) with the methods the
runner and the site ask it: ``plan`` (the exact requests), ``token_costs`` (what they cost),
``check_evidence`` (what a result of it must agree with), and, read leniently from a stored
canonical dict so that every stored row labels as it always did, ``workload_label``,
``prompt_suite``, ``stored_depths`` and ``stored_output_lengths``. The defaults here are what a protocol
without that part answers; ``runner.protocols`` keeps the registry.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    # Only a type here: runner.config imports the protocols.
    from runner.config import BenchmarkConfig

MAX_CONTEXT = 262_144
MAX_REQUEST_TOKENS = 131_072

Tokens = tuple[int, int, int]  # requests, prompt tokens, generated tokens


@dataclass(frozen=True)
class RequestSpec:
    """One request: a text prompt or exact token ids, a fixed output length, greedy sampling."""

    phase: str  # "warmup" or "measure"
    point: int  # index of the depth (0 for the quick protocol)
    input_tokens: int | None  # exact prompt length for token-id prompts, None for text
    output_tokens: int
    prompt: str | list[int]
    seed: int
    stream: bool = True
    # The concurrency protocol's wave and its size; the categories protocol's category.
    round: int | None = None
    concurrency: int | None = None
    category: str | None = None

    def labels(self) -> dict[str, Any]:
        """What the request's record carries besides its measurements: round, concurrency and
        category (None where the protocol has none)."""
        return {"round": self.round, "concurrency": self.concurrency, "category": self.category}

    def body(self) -> dict[str, Any]:
        """The /completion request body: greedy, fixed length, prompt cache off.

        Greedy is a one-sampler chain, top-k with k = 1: the same tokens as the full default
        chain at temperature 0, and the chain that GPU-side sampling (-bs) runs without fault
        (b11434's full chain there sometimes yields token 2^31-1 and a server error).
        """
        return {
            "prompt": self.prompt,
            "n_predict": self.output_tokens,
            "ignore_eos": True,
            "cache_prompt": False,
            "samplers": ["top_k"],
            "temperature": 0.0,
            "top_k": 1,
            "top_p": 1.0,
            "seed": self.seed,
            "stream": self.stream,
            "return_tokens": True,
        }

    @property
    def prompt_sha256(self) -> str:
        """The sha256 of the exact prompt (its text, or its token ids as a JSON list)."""
        return hashlib.sha256(json.dumps(self.prompt).encode()).hexdigest()


def token_prompt(length: int, *, vocab_size: int, rng: np.random.Generator) -> list[int]:
    """An exact prompt of ``length`` random token ids, skipping the low ids, where tokenizers
    keep control and byte tokens."""
    low = min(1000, vocab_size // 4)
    return list(rng.integers(low, vocab_size - 1, size=length).tolist())


def text_tokens(prompt: str) -> int:
    """A text prompt's length in tokens as the plans and the token budget estimate it: four
    characters a token."""
    return max(1, len(prompt) // 4)


def text_costs(texts: Sequence[str], output_tokens: int) -> Tokens:
    """What some text prompts cost, each generating ``output_tokens``."""
    return len(texts), sum(text_tokens(text) for text in texts), len(texts) * output_tokens


def times(each: Tokens, count: int) -> Tokens:
    """``count`` requests that each cost ``each``."""
    return (each[0] * count, each[1] * count, each[2] * count)


def whole(value: object) -> int | None:
    """A stored value as a whole number, None for anything else (booleans included)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def wholes(values: object) -> list[int]:
    """The whole numbers of a stored list, in order; [] for anything but a list."""
    return (
        [value for value in values if whole(value) is not None] if isinstance(values, list) else []
    )


def span(values: Sequence[int]) -> str:
    """'512–4096' of some lengths or levels, '512' of one."""
    return f"{values[0]}" if len(values) == 1 else f"{min(values)}–{max(values)}"


class ProtocolBase(BaseModel):
    """One protocol: a frozen schema with ``extra="forbid"``, and what the runner and the site
    ask of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    if TYPE_CHECKING:
        # Each protocol declares it as a Literal with its default: the union's discriminator.
        name: str

    # Whether it sends requests in parallel waves, which only llama-server answers.
    parallel: ClassVar[bool] = False
    # The field that asks for more than one slot (so for the memory of their contexts).
    slots_field: ClassVar[str | None] = None

    def required_context(self) -> int:
        """The context one slot needs: a request's prompt and output, plus slack."""
        raise NotImplementedError

    @property
    def slots(self) -> int:
        """The most requests in flight at once (the engine's -np at most)."""
        return 1

    def engine_context(self) -> int:
        """The engine's context where the config names none: per slot, times the slots."""
        return self.required_context() * self.slots

    def plan(self, config: BenchmarkConfig, *, vocab_size: int) -> list[RequestSpec]:
        """Every request in order, warm-ups first at each point."""
        raise NotImplementedError

    def measured_waves_per_point(self) -> int:
        """The most measured waves any one point has: what a paired run's rounds can split."""
        raise NotImplementedError

    def token_costs(self) -> tuple[Tokens, Tokens]:
        """What the warm-ups cost, then what the measured requests cost."""
        raise NotImplementedError

    def scores(self, records: Sequence[Mapping[str, Any]]) -> list[dict[str, object] | None]:
        """Each measured request's score on its task: None for a protocol without tasks."""
        return [None] * len(records)

    def with_point_figures(
        self, points: list[dict[str, Any]], records: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        """A section's points with the figures only this protocol's points carry."""
        return points

    def with_paired_figures(
        self, points: list[dict[str, Any]], baseline_points: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        """The measured config's points with the figures only a pair of this protocol gives."""
        return points

    @classmethod
    def read_stored(cls, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored protocol dict as the schema reads it today (the same key): as it is, unless
        the protocol's schema changed since."""
        return stored

    @classmethod
    def check_evidence(cls, result: Mapping[str, Any]) -> str | None:
        """The first of this protocol's own figures in a result that the result's data
        contradict; None if none does (or the protocol has no figures of its own)."""
        return None

    # What the site reads from a stored canonical dict: leniently, since a stored row may have
    # been written by an older schema; anything malformed reads as absent.

    @classmethod
    def workload_label(cls, stored: Mapping[str, Any], *, prompt_set: str = "") -> str:
        """The workload in words, enough to tell two rows of the protocol apart."""
        return str(cls.model_fields["name"].default)

    @classmethod
    def prompt_suite(cls, stored: Mapping[str, Any]) -> str | None:
        """The prompt suite's version its prompts come from; None for prompts of no suite."""
        return None

    @classmethod
    def stored_depths(cls, stored: Mapping[str, Any]) -> list[int]:
        """The input lengths its points measure, where they vary ([] otherwise)."""
        return []

    @classmethod
    def stored_output_lengths(cls, stored: Mapping[str, Any]) -> list[int]:
        """The output lengths its points measure, where they vary ([] otherwise)."""
        return []

    @classmethod
    def prompt_set(
        cls, prompt: object, records: list[dict[str, Any]], *, planned_token_ids: bool
    ) -> str:
        """Which prompts a batch of it sent, where its parameters do not say: "" for most."""
        return ""


def stored_sizes(stored: Mapping[str, Any], *names: tuple[str, str]) -> list[str]:
    """'512 in', '256 out' of the stored (field, word) pairs that hold a whole number."""
    return [
        f"{value} {word}"
        for field, word in names
        if (value := whole(stored.get(field))) is not None
    ]


class SweepPoint(BaseModel):
    """One point of a sweep: exact input length, output length, measured and warm-up requests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: int = Field(strict=True, ge=1, le=MAX_REQUEST_TOKENS)
    output_tokens: int = Field(strict=True, ge=1, le=MAX_REQUEST_TOKENS)
    requests: int = Field(strict=True, ge=1, le=200)
    warmup: int = Field(strict=True, default=1, ge=0, le=20)


def points_plan(
    points: Sequence[SweepPoint], *, seed: int, config: BenchmarkConfig, vocab_size: int
) -> list[RequestSpec]:
    """The plan of a protocol measured point by point on exact token-id prompts (the sweeps and
    the output lengths): per point its warm-ups, then its measured requests."""
    rng = np.random.default_rng(seed)
    return [
        RequestSpec(
            phase,
            index,
            point.input_tokens,
            point.output_tokens,
            token_prompt(point.input_tokens, vocab_size=vocab_size, rng=rng),
            seed,
            config.stream,
        )
        for index, point in enumerate(points)
        for phase in ["warmup"] * point.warmup + ["measure"] * point.requests
    ]


def points_costs(points: Sequence[SweepPoint]) -> tuple[Tokens, Tokens]:
    """What a point-by-point plan's warm-ups cost, then its measured requests."""
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


def depths_label(name: str, depths: Sequence[int]) -> str:
    """'depth 512–36864 tokens (4 depths)', 'depth 512 tokens', or the name without depths."""
    if len(depths) == 1:
        return f"{name} {depths[0]} tokens"
    if depths:
        return f"{name} {span(depths)} tokens ({len(depths)} depths)"
    return name
