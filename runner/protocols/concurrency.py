"""The concurrency protocol: requests in flight at once, per level that many slots and waves of
that many requests, each with its own prompt (exact token ids, or with ``prompts: "suite"`` a
distinct text of the prompt suite drawn from the seed). Its figure is aggregate tok/s over the
rounds, so its rows rank only among themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Literal

import numpy as np
from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from runner.prompts import CURRENT_SUITE, load_suite, prompts_up_to
from runner.protocols.base import (
    MAX_CONTEXT,
    MAX_REQUEST_TOKENS,
    ProtocolBase,
    RequestSpec,
    Tokens,
    stored_sizes,
    text_costs,
    times,
    token_prompt,
    whole,
)

if TYPE_CHECKING:
    from runner.config import BenchmarkConfig

# Slots (requests in flight at once) the protocol asks llama-server for at most; the engine's own
# ceiling is LLAMA_MAX_SEQ = 256 sequences in b11434.
MAX_CONCURRENCY = 64
MAX_CONCURRENCY_LEVELS = 16
SuiteVersion = Literal["1", "2"]
# The prompt sources: exact random token ids of ``input_tokens`` each (on which a real draft or
# n-gram accepts next to nothing), or the prompt suite's text.
TOKEN_IDS: Final = "token-ids"


class ConcurrencyProtocol(ProtocolBase):
    """Requests in flight at once: per level, that many slots and waves of that many requests.

    For each level the engine runs with that many slots (``-np level``); each round is one wave
    of ``level`` simultaneous requests, each with its own prompt. The context is per slot, and
    llama-server splits ``-c`` across its slots, so the engine gets the per-slot context times
    the level.

    ``prompts`` says where the prompts come from: ``"token-ids"`` (the default) sends exact
    random token ids of ``input_tokens`` each; ``"suite"`` sends text prompts of the prompt suite
    (``suite``, the current one unless named), every request a distinct prompt drawn from the
    seed among the suite's prompts of at most twice ``input_tokens`` bytes (a text's tokens are at
    most half its bytes for the tokenizers measured, so ``input_tokens`` bounds each prompt), so
    that acceptance under load is a real draft's on real text. The two never rank together: the
    source is part of the workload (left out of the canonical config at its default, so configs
    written before the option keep their keys).
    """

    parallel: ClassVar[bool] = True
    slots_field: ClassVar[str | None] = "levels"

    name: Literal["concurrency"] = "concurrency"
    input_tokens: int = Field(strict=True, default=512, ge=1, le=MAX_REQUEST_TOKENS)
    output_tokens: int = Field(strict=True, default=256, ge=1, le=MAX_REQUEST_TOKENS)
    # After the lengths, so that the levels' check can see the context they need.
    levels: list[Annotated[int, Field(strict=True)]] = Field(
        default=[1, 2, 4, 8, 16], max_length=MAX_CONCURRENCY_LEVELS
    )
    rounds: int = Field(strict=True, default=3, ge=1, le=100)
    warmup: int = Field(strict=True, default=1, ge=0, le=20)
    seed: int = Field(strict=True, default=42, ge=0, le=2**31 - 1)
    prompts: Literal["token-ids", "suite"] = Field(
        default=TOKEN_IDS,
        description='"token-ids": exact random token ids of input_tokens each; "suite": '
        "distinct text prompts of the prompt suite of at most 2 x input_tokens bytes.",
    )
    suite: SuiteVersion | None = Field(
        default=None,
        description='The prompt suite\'s version with prompts "suite" (the current one unless '
        "named); none with token ids.",
    )

    @model_validator(mode="after")
    def _suite_prompts_suffice(self) -> ConcurrencyProtocol:
        if self.prompts == TOKEN_IDS:
            if self.suite is not None:
                raise ValueError('a suite is named, but prompts is "token-ids": name none')
            return self
        if self.suite is None:
            object.__setattr__(self, "suite", CURRENT_SUITE)
        available = len(self.suite_pool)
        needed = sum(self.levels) * (self.warmup + self.rounds)
        if needed > available:
            raise ValueError(
                f"{needed} requests need as many distinct prompts, but suite {self.suite} has "
                f"{available} of at most {2 * self.input_tokens} bytes (input_tokens "
                f"{self.input_tokens}): fewer levels or rounds, or a larger input_tokens"
            )
        return self

    @model_serializer(mode="wrap")
    def _defaults_left_out(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("prompts") == TOKEN_IDS:
            data.pop("prompts")
        if data.get("suite") is None:
            data.pop("suite", None)
        return data

    @property
    def suite_pool(self) -> list[str]:
        """The suite prompts this protocol may send (none for token-id prompts)."""
        if self.prompts == TOKEN_IDS or self.suite is None:
            return []
        return prompts_up_to(load_suite(self.suite), 2 * self.input_tokens)

    @field_validator("levels")
    @classmethod
    def _levels_the_engine_can_run(cls, levels: list[int], info: ValidationInfo) -> list[int]:
        if not levels:
            raise ValueError("give at least one concurrency level")
        for level in levels:
            if not 1 <= level <= MAX_CONCURRENCY:
                raise ValueError(
                    f"level {level} is outside the engine's slot limit: levels must lie between "
                    f"1 and {MAX_CONCURRENCY}"
                )
        if any(later <= earlier for earlier, later in zip(levels, levels[1:], strict=False)):
            raise ValueError("levels must be strictly increasing, without duplicates")
        if "input_tokens" in info.data and "output_tokens" in info.data:
            per_slot = info.data["input_tokens"] + info.data["output_tokens"] + 16
            total = per_slot * max(levels)
            if total > MAX_CONTEXT:
                raise ValueError(
                    f"{max(levels)} slots of {per_slot} tokens need {total} tokens of context, "
                    f"above {MAX_CONTEXT}"
                )
        return levels

    @property
    def slots(self) -> int:
        """The most slots any level needs: the engine's total context is sized for these."""
        return max(self.levels)

    def required_context(self) -> int:
        """Context per slot: one request's prompt and output, plus slack."""
        return self.input_tokens + self.output_tokens + 16

    def suite_prompts(self) -> list[str]:
        """The suite prompts of the plan in the order sent, one per request, every one distinct:
        a permutation of the pool drawn from the seed ([] for token ids)."""
        pool = self.suite_pool
        if not pool:
            return []
        needed = sum(self.levels) * (self.warmup + self.rounds)
        order = np.random.default_rng(self.seed).permutation(len(pool))[:needed]
        return [pool[int(i)] for i in order]

    def plan(self, config: BenchmarkConfig, *, vocab_size: int) -> list[RequestSpec]:
        """Per level, ``warmup`` then ``rounds`` waves of ``level`` requests."""
        rng = np.random.default_rng(self.seed)
        texts = iter(self.suite_prompts())
        requests = []
        for index, level in enumerate(self.levels):
            rounds = [("warmup", r) for r in range(self.warmup)]
            rounds += [("measure", r) for r in range(self.rounds)]
            for phase, wave in rounds:
                for _ in range(level):
                    prompt: str | list[int]
                    if self.suite_pool:
                        prompt, length = next(texts), None
                    else:
                        prompt = token_prompt(self.input_tokens, vocab_size=vocab_size, rng=rng)
                        length = self.input_tokens
                    requests.append(
                        RequestSpec(
                            phase,
                            index,
                            length,
                            self.output_tokens,
                            prompt,
                            self.seed,
                            config.stream,
                            round=wave,
                            concurrency=level,
                        )
                    )
        return requests

    def measured_waves_per_point(self) -> int:
        return self.rounds

    def token_costs(self) -> tuple[Tokens, Tokens]:
        if not self.suite_pool:
            each = (1, self.input_tokens, self.output_tokens)
            requests = sum(self.levels)
            return times(each, requests * self.warmup), times(each, requests * self.rounds)
        # The plan's order: per level, its warm-up waves, then its measured ones.
        texts, warmups, measured = iter(self.suite_prompts()), [], []
        for level in self.levels:
            warmups += [next(texts) for _ in range(level * self.warmup)]
            measured += [next(texts) for _ in range(level * self.rounds)]
        return text_costs(warmups, self.output_tokens), text_costs(measured, self.output_tokens)

    @classmethod
    def check_evidence(cls, result: Mapping[str, Any]) -> str | None:
        """The crossover level against the two sections' requests (runner.evidence)."""
        # Inside the method: runner.evidence reads the protocols.
        from runner.evidence import crossover_problem

        return crossover_problem(dict(result))

    @classmethod
    def workload_label(cls, stored: Mapping[str, Any], *, prompt_set: str = "") -> str:
        """'concurrency 1–16 (5 levels), 512 in, 256 out', or with suite prompts 'concurrency
        1–16 (5 levels), suite 2 prompts of at most 512 tokens, 256 out'."""
        values = stored.get("levels")
        levels = [level for level in values if whole(level)] if isinstance(values, list) else []
        parts = [
            f"concurrency {min(levels)}–{max(levels)} ({len(levels)} levels)"
            if levels
            else "concurrency"
        ]
        suite = stored.get("suite") if isinstance(stored.get("suite"), str) else None
        if stored.get("prompts") != "suite":
            return ", ".join(
                parts + stored_sizes(stored, ("input_tokens", "in"), ("output_tokens", "out"))
            )
        if (bound := whole(stored.get("input_tokens"))) is not None:
            parts.append(f"suite {suite} prompts of at most {bound} tokens")
        return ", ".join(parts + stored_sizes(stored, ("output_tokens", "out")))

    @classmethod
    def prompt_suite(cls, stored: Mapping[str, Any]) -> str | None:
        suite = stored.get("suite")
        if stored.get("prompts") == "suite" and isinstance(suite, str):
            return suite
        return None
