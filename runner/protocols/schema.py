"""The protocol part of the benchmark config: how a config is measured (which requests, how
many, at which depths or concurrency levels, over which prompts), one pydantic model each, the
discriminated ``Protocol`` union that ``runner.config.BenchmarkConfig`` holds.

``runner.config`` re-exports every name here; ``runner.protocols.plans`` turns a protocol into
the exact list of requests to send, ``runner.protocols.budget`` counts what they cost.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from runner.prompts import CURRENT_SUITE, FIRST_SUITE, load_suite, prompts_up_to
from runner.quality import KINDS as QUALITY_KINDS
from runner.quality import tasks as quality_tasks
from runner.quality import warmup_tasks as quality_warmups

MAX_CONTEXT = 262_144
MAX_REQUEST_TOKENS = 131_072
# Slots (requests in flight at once) the concurrency protocol asks llama-server for at most; the
# engine's own ceiling is LLAMA_MAX_SEQ = 256 sequences in b11434.
MAX_CONCURRENCY = 64
MAX_CONCURRENCY_LEVELS = 16
# Output lengths the output-length protocol measures at most in one run.
MAX_OUTPUT_LENGTHS = 8

QUICK_PROMPT = (
    "Write a Python program to find the nth Fibonacci number using recursion. "
    "Explain briefly and include code."
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class QuickProtocol(_Strict):
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


class SweepPoint(_Strict):
    """One context depth: exact input length, output length, measured and warm-up requests."""

    input_tokens: int = Field(strict=True, ge=1, le=MAX_REQUEST_TOKENS)
    output_tokens: int = Field(strict=True, ge=1, le=MAX_REQUEST_TOKENS)
    requests: int = Field(strict=True, ge=1, le=200)
    warmup: int = Field(strict=True, default=1, ge=0, le=20)


def _seed_sweep() -> list[SweepPoint]:
    return [
        SweepPoint(input_tokens=n, output_tokens=n, requests=r, warmup=w)
        for n, r, w in ((512, 30, 2), (4096, 10, 2), (12288, 5, 1), (36864, 3, 1))
    ]


class ContextSweepProtocol(_Strict):
    """The seed's sweep: input = output length at several depths, token-id prompts."""

    name: Literal["context-sweep"] = "context-sweep"
    points: list[SweepPoint] = Field(default_factory=_seed_sweep, min_length=1, max_length=16)
    seed: int = Field(strict=True, default=42, ge=0, le=2**31 - 1)

    def required_context(self) -> int:
        return max(p.input_tokens + p.output_tokens for p in self.points) + 16


class DepthProtocol(_Strict):
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


SuiteVersion = Literal["1", "2"]
# The concurrency protocol's prompt sources: exact random token ids of ``input_tokens`` each (on
# which a real draft or n-gram accepts next to nothing), or the prompt suite's text.
TOKEN_IDS: Final = "token-ids"


class ConcurrencyProtocol(_Strict):
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
    def _defaults_left_out(self, handler: SerializerFunctionWrapHandler) -> dict:
        data = handler(self)
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


def _all_categories(data: dict) -> list[str]:
    return list(load_suite(data.get("suite", CURRENT_SUITE)).names)


def stored_canonical(data: dict[str, Any]) -> dict[str, Any]:
    """A stored result's config as its suite-versioned form: a categories protocol that names no
    suite was measured on the first suite (results written before suites had versions), so it
    is read as suite "1" (which the canonical config leaves out, keeping those configs' keys)."""
    protocol = data.get("protocol")
    if isinstance(protocol, dict) and protocol.get("name") == "categories":
        if "suite" not in protocol:
            return data | {"protocol": protocol | {"suite": FIRST_SUITE}}
    return data


class CategoriesProtocol(_Strict):
    """The project's prompt suite by task category: per category, a seeded sample of its prompts.

    Prompts are completion-style text (runner/prompts/, ``suite`` names the suite version, the
    current one unless a config names another); per category ``prompts_per_category`` of its
    prompts are drawn from ``seed`` (``runner.prompts.sample_prompts``: the same seed, the same
    sample), and every measured request has its own prompt, so n-gram state never sees a measured
    prompt twice. A config of the first suite leaves ``suite`` out of its canonical form, so
    configs written before suites had versions keep their keys; a stored result without it is
    read as the first suite (``stored_canonical``).
    """

    name: Literal["categories"] = "categories"
    # Before the categories, so that their checks see which suite they are of.
    suite: SuiteVersion = Field(
        default=CURRENT_SUITE,
        description="The prompt suite's version (runner/prompts/); results without one were "
        'measured on suite "1".',
    )
    categories: list[str] = Field(default_factory=_all_categories, max_length=64)
    output_tokens: int = Field(strict=True, default=128, ge=1, le=MAX_REQUEST_TOKENS)
    prompts_per_category: int = Field(strict=True, default=5, ge=1, le=100)
    warmup: int = Field(strict=True, default=1, ge=0, le=20)
    seed: int = Field(strict=True, default=7, ge=0, le=2**31 - 1)

    @model_serializer(mode="wrap")
    def _first_suite_left_out(self, handler: SerializerFunctionWrapHandler) -> dict:
        data = handler(self)
        if data.get("suite") == FIRST_SUITE:
            data.pop("suite")
        return data

    @field_validator("categories")
    @classmethod
    def _known_categories(cls, categories: list[str], info: ValidationInfo) -> list[str]:
        known = load_suite(info.data.get("suite", CURRENT_SUITE)).names
        if not categories:
            raise ValueError(f"choose at least one category; known: {', '.join(known)}")
        for category in categories:
            if category not in known:
                raise ValueError(f"unknown category {category!r}; known: {', '.join(known)}")
        if len(set(categories)) != len(categories):
            raise ValueError("a category is listed twice")
        # The suite's order: one set of categories is one config (and one run order).
        return sorted(categories, key=known.index)

    @field_validator("prompts_per_category")
    @classmethod
    def _prompts_exist(cls, count: int, info: ValidationInfo) -> int:
        fewest = load_suite(info.data.get("suite", CURRENT_SUITE)).fewest_prompts
        if count > fewest:
            raise ValueError(f"{count} is more than the suite has: every category has {fewest}")
        return count

    @field_validator("warmup")
    @classmethod
    def _warmups_exist(cls, count: int, info: ValidationInfo) -> int:
        available = len(load_suite(info.data.get("suite", CURRENT_SUITE)).warmup)
        if count > available:
            raise ValueError(f"{count} is more than the suite's {available} warm-up prompts")
        return count

    def required_context(self) -> int:
        # Text prompts: at least two characters a token (the test tokenizer takes five bytes a
        # token, real tokenizers about four characters), plus slack, as for the quick protocol.
        suite = load_suite(self.suite)
        prompts = [p for c in self.categories for p in suite.categories[c]]
        prompts += list(suite.warmup[: self.warmup])
        return self.output_tokens + max(len(p.encode()) // 2 for p in prompts) + 64


def _seed_output_lengths() -> list[int]:
    return [64, 256, 1024, 2048]


class OutputLengthProtocol(_Strict):
    """Output length varies, input length is fixed: how a speedup moves with the tokens asked.

    Per length, ``warmup`` then ``requests`` requests of exact token-id prompts (as the depth
    protocol's), each forced to its length (``ignore_eos``, runner.protocols.plans.RequestSpec),
    so every request generates exactly the tokens asked; the records' ``predicted_n`` say so
    and each point's ``generated_tokens`` is derived from them (runner.evidence).
    """

    name: Literal["output-length"] = "output-length"
    input_tokens: int = Field(strict=True, default=512, ge=1, le=MAX_REQUEST_TOKENS)
    # After the input length, so that the lengths' check can see the context they need.
    output_lengths: list[Annotated[int, Field(strict=True)]] = Field(
        default_factory=_seed_output_lengths, max_length=MAX_OUTPUT_LENGTHS
    )
    requests: int = Field(strict=True, default=5, ge=1, le=200)
    warmup: int = Field(strict=True, default=1, ge=0, le=20)
    seed: int = Field(strict=True, default=42, ge=0, le=2**31 - 1)

    @field_validator("output_lengths")
    @classmethod
    def _lengths_the_context_holds(cls, lengths: list[int], info: ValidationInfo) -> list[int]:
        if not lengths:
            raise ValueError("give at least one output length")
        for length in lengths:
            if not 1 <= length <= MAX_REQUEST_TOKENS:
                raise ValueError(
                    f"output length {length} must lie between 1 and {MAX_REQUEST_TOKENS}"
                )
        if any(later <= earlier for earlier, later in zip(lengths, lengths[1:], strict=False)):
            raise ValueError("output lengths must be strictly increasing, without duplicates")
        if "input_tokens" in info.data:
            needed = info.data["input_tokens"] + max(lengths) + 16
            if needed > MAX_CONTEXT:
                raise ValueError(
                    f"{info.data['input_tokens']} tokens in and {max(lengths)} out need "
                    f"{needed} tokens of context, above {MAX_CONTEXT}"
                )
        return lengths

    def required_context(self) -> int:
        return self.input_tokens + max(self.output_lengths) + 16

    @property
    def points(self) -> list[SweepPoint]:
        return [
            SweepPoint(
                input_tokens=self.input_tokens,
                output_tokens=length,
                requests=self.requests,
                warmup=self.warmup,
            )
            for length in self.output_lengths
        ]


class QualityProtocol(_Strict):
    """Questions with answers the project computes, scored exactly (runner.quality).

    ``tasks`` questions generated from ``task_seed`` (its kinds in turn, every answer computed by
    Python), each a few-shot text prompt answered greedily (temperature 0, top-k 1) in
    ``max_tokens`` tokens; the answer is the output's first line. Run with its paired baseline,
    the two sides' accuracies and their paired difference are the result's quality figures.
    The seed is named ``task_seed`` because it decides the questions, so it is part of what the
    figure means (a workload), unlike the other protocols' seeds.
    """

    name: Literal["quality"] = "quality"
    kinds: list[str] = Field(default_factory=lambda: list(QUALITY_KINDS), max_length=16)
    tasks: int = Field(strict=True, default=24, ge=1, le=500)
    task_seed: int = Field(strict=True, default=2026, ge=0, le=2**31 - 1)
    max_tokens: int = Field(strict=True, default=16, ge=1, le=256)
    sampling: Literal["greedy"] = "greedy"
    warmup: int = Field(strict=True, default=1, ge=0, le=20)

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, kinds: list[str]) -> list[str]:
        if not kinds:
            raise ValueError(f"choose at least one kind; known: {', '.join(QUALITY_KINDS)}")
        for kind in kinds:
            if kind not in QUALITY_KINDS:
                raise ValueError(f"unknown kind {kind!r}; known: {', '.join(QUALITY_KINDS)}")
        if len(set(kinds)) != len(kinds):
            raise ValueError("a kind is listed twice")
        # The module's order: one set of kinds is one config (and one list of tasks).
        return sorted(kinds, key=QUALITY_KINDS.index)

    def required_context(self) -> int:
        # Text prompts at two bytes a token at least, as for the categories protocol.
        prompts = quality_tasks(seed=self.task_seed, count=self.tasks, kinds=self.kinds)
        prompts += quality_warmups(seed=self.task_seed, count=self.warmup, kinds=self.kinds)
        return self.max_tokens + max(len(task.prompt.encode()) // 2 for task in prompts) + 64


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
