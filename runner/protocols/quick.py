"""The quick protocol, the seed's leaderboard protocol: one fixed prompt, repeated runs of a
fixed length.

It repeats one prompt, which is fair to every speculative type but the n-gram ones: their caches
(``ngram-mod``'s hash pool, ``ngram-cache``, the n-gram maps) outlive a request in llama-server,
which has no call to clear them, so by the second run they have learned the answer and draft it
whole. For configs with an n-gram type every request therefore gets its own exact token-id
prompt of about the text's length, drawn from the protocol's seed; the paired baseline runs the
same plan. Which of the two a stored batch sent is its ``prompt_set``, a workload of its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field, field_validator

from runner.protocols.base import (
    MAX_REQUEST_TOKENS,
    ProtocolBase,
    RequestSpec,
    Tokens,
    stored_sizes,
    text_tokens,
    times,
    token_prompt,
    whole,
)

if TYPE_CHECKING:
    from runner.config import BenchmarkConfig

QUICK_PROMPT = (
    "Write a Python program to find the nth Fibonacci number using recursion. "
    "Explain briefly and include code."
)
# How much of the prompt a label shows.
PROMPT_PREVIEW = 40
# The prompts a batch actually sent (`prompt_set`): the protocol's text, or the runner's distinct
# token-id prompts (its plan for n-gram configs and their paired baselines).
TEXT_PROMPT = "text"
TOKEN_ID_PROMPTS = "token-ids"


class QuickProtocol(ProtocolBase):
    """The seed's leaderboard protocol: one fixed prompt, repeated runs of a fixed length."""

    name: Literal["quick"] = "quick"
    prompt: str = Field(default=QUICK_PROMPT, min_length=1, max_length=20_000)
    runs: int = Field(strict=True, default=10, ge=1, le=200)
    warmup: int = Field(strict=True, default=1, ge=0, le=20)
    n_predict: int = Field(strict=True, default=1500, ge=1, le=MAX_REQUEST_TOKENS)
    seed: int = Field(strict=True, default=1234, ge=0, le=2**31 - 1)

    @field_validator("prompt")
    @classmethod
    def _no_nul(cls, prompt: str) -> str:
        # Neither a result file nor PostgreSQL's jsonb can carry a NUL character.
        if "\x00" in prompt:
            raise ValueError("must not contain a NUL character")
        return prompt

    def required_context(self) -> int:
        # The prompt is short; leave it generous room (roughly 4 characters a token, plus slack).
        return self.n_predict + len(self.prompt) // 2 + 64

    def engine_context(self) -> int:
        # The seed's leaderboard protocol runs with a 3000-token context.
        return max(3000, self.required_context())

    def plan(self, config: BenchmarkConfig, *, vocab_size: int) -> list[RequestSpec]:
        """The text prompt, repeated; for an n-gram config a distinct token-id prompt of about
        the text's length per request (see the module)."""
        phases = ["warmup"] * self.warmup + ["measure"] * self.runs
        if not config.learns_across_requests:
            return [
                RequestSpec(phase, 0, None, self.n_predict, self.prompt, self.seed, config.stream)
                for phase in phases
            ]
        rng = np.random.default_rng(self.seed)
        length = text_tokens(self.prompt)
        return [
            RequestSpec(
                phase,
                0,
                length,
                self.n_predict,
                token_prompt(length, vocab_size=vocab_size, rng=rng),
                self.seed,
                config.stream,
            )
            for phase in phases
        ]

    def measured_waves_per_point(self) -> int:
        return self.runs

    def token_costs(self) -> tuple[Tokens, Tokens]:
        each = (1, text_tokens(self.prompt), self.n_predict)
        return times(each, self.warmup), times(each, self.runs)

    @classmethod
    def workload_label(cls, stored: Mapping[str, Any], *, prompt_set: str = "") -> str:
        """'quick, 64 out, prompt “Write a …”' or, for token-id prompts, 'quick, 64 out,
        distinct token-id prompts of 28 tokens'."""
        parts = ["quick", *stored_sizes(stored, ("n_predict", "out"))]
        prompt = stored.get("prompt")
        if isinstance(prompt, str) and prompt:
            if prompt_set == TOKEN_ID_PROMPTS:
                # The runner sent token ids of about the text's length, never the text itself.
                parts.append(f"distinct token-id prompts of {text_tokens(prompt)} tokens")
            else:
                cut = " ".join(prompt[:PROMPT_PREVIEW].split())
                parts.append(f"prompt “{cut}{'…' if len(prompt) > PROMPT_PREVIEW else ''}”")
        return ", ".join(parts)

    @classmethod
    def prompt_set(
        cls, prompt: object, records: list[dict[str, Any]], *, planned_token_ids: bool
    ) -> str:
        """Which prompts a batch sent: from its measured requests' prompt hashes (all the
        protocol's text: TEXT_PROMPT, else TOKEN_ID_PROMPTS), else from their exact lengths (a
        token-id prompt records one), else from the plan of the invocation that measured it."""
        hashes = {record.get("prompt_sha256") for record in records} - {None, ""}
        if hashes:
            text = hashlib.sha256(json.dumps(prompt).encode()).hexdigest()
            return TEXT_PROMPT if hashes == {text} else TOKEN_ID_PROMPTS
        if any(whole(record.get("input_tokens")) is not None for record in records):
            return TOKEN_ID_PROMPTS
        return TOKEN_ID_PROMPTS if planned_token_ids else TEXT_PROMPT
