"""The categories protocol: the project's prompt suite by task category, per category a seeded
sample of its text prompts (runner/prompts/), every prompt distinct, after warm-ups on prompts
that belong to no category. Its figures are per category, so its rows rank only among
themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from runner.prompts import CURRENT_SUITE, FIRST_SUITE, load_suite, sample_prompts
from runner.protocols.base import (
    MAX_REQUEST_TOKENS,
    ProtocolBase,
    RequestSpec,
    Tokens,
    stored_sizes,
    text_costs,
    whole,
)
from runner.protocols.concurrency import SuiteVersion

if TYPE_CHECKING:
    from runner.config import BenchmarkConfig


def _all_categories(data: dict[str, Any]) -> list[str]:
    return list(load_suite(data.get("suite", CURRENT_SUITE)).names)


class CategoriesProtocol(ProtocolBase):
    """The project's prompt suite by task category: per category, a seeded sample of its prompts.

    Prompts are completion-style text (runner/prompts/, ``suite`` names the suite version, the
    current one unless a config names another); per category ``prompts_per_category`` of its
    prompts are drawn from ``seed`` (``runner.prompts.sample_prompts``: the same seed, the same
    sample), and every measured request has its own prompt, so n-gram state never sees a measured
    prompt twice. A config of the first suite leaves ``suite`` out of its canonical form, so
    configs written before suites had versions keep their keys; a stored result without it is
    read as the first suite (``read_stored``).
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
    def _first_suite_left_out(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
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

    def prompts(self) -> list[tuple[int, str, str]]:
        """(point, category, prompt) of every measured request: per category,
        prompts_per_category of its suite's prompts, drawn from the seed, in the suite's order."""
        return sample_prompts(
            load_suite(self.suite), self.categories, size=self.prompts_per_category, seed=self.seed
        )

    def warmup_prompts(self) -> list[str]:
        """The warm-ups' prompts: the suite's own, which belong to no category."""
        return list(load_suite(self.suite).warmup[: self.warmup])

    def plan(self, config: BenchmarkConfig, *, vocab_size: int) -> list[RequestSpec]:
        """Warm-ups, then category by category its sampled prompts."""
        output, seed, stream = self.output_tokens, self.seed, config.stream
        return [
            RequestSpec("warmup", 0, None, output, text, seed, stream)
            for text in self.warmup_prompts()
        ] + [
            RequestSpec("measure", index, None, output, text, seed, stream, category=category)
            for index, category, text in self.prompts()
        ]

    def measured_waves_per_point(self) -> int:
        return self.prompts_per_category

    def token_costs(self) -> tuple[Tokens, Tokens]:
        measured = [text for _, _, text in self.prompts()]
        return (
            text_costs(self.warmup_prompts(), self.output_tokens),
            text_costs(measured, self.output_tokens),
        )

    @classmethod
    def read_stored(cls, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored protocol as its suite-versioned form: one that names no suite was measured
        on the first suite (written before suites had versions), which the canonical config
        leaves out, keeping those configs' keys."""
        return stored if "suite" in stored else stored | {"suite": FIRST_SUITE}

    @classmethod
    def workload_label(cls, stored: Mapping[str, Any], *, prompt_set: str = "") -> str:
        """'categories code, math, … (7), 2 prompts each', the suite named after the first."""
        values = stored.get("categories")
        names = [c for c in values if isinstance(c, str)] if isinstance(values, list) else []
        shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
        parts = [f"categories {shown} ({len(names)})" if names else "categories"]
        if isinstance(suite := stored.get("suite"), str) and suite:
            parts.append(f"suite {suite}")
        parts += stored_sizes(stored, ("output_tokens", "out"))
        if (per := whole(stored.get("prompts_per_category"))) is not None:
            parts.append(f"{per} prompts each")
        return ", ".join(parts)

    @classmethod
    def prompt_suite(cls, stored: Mapping[str, Any]) -> str | None:
        """Its suite's version, "1" where the stored dict names none."""
        suite = stored.get("suite")
        return suite if isinstance(suite, str) else FIRST_SUITE
