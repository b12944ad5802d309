"""The project's own prompt suites for the categories protocol (and the concurrency protocol's
suite prompts), stored as package data, and the seeded sample a protocol draws from one.

Each suite is a versioned file of completion-style prompts (the real test model is a base model,
so each prompt is text to continue: a code file's start, a worked problem, a document followed by
"Summary:"), written for this project, grouped by task category, plus warm-up prompts that belong
to no category:

- suite "1", ``categories.json``: the first suite, 7 categories of 5-6 prompts (five of them
  sharing one long prefix). Results measured on it keep naming it, and still load and render.
- suite "2", ``suite-2.json``: 13 categories of at least 20 prompts each, every prompt with its
  length stated in characters and in tokens of the real model's tokenizer (Gemma 3 270M,
  ``runner.gguf.real_model``), no two sharing a prefix longer than the file's
  ``max_shared_prefix`` characters unless their category is labelled as being about a shared
  prefix. The current suite: what a config gets unless it names another.

This module reads a suite once, checks what its file states, and says which categories exist.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Final

import numpy as np

SUITE_FILES = {"1": "categories.json", "2": "suite-2.json"}
CURRENT_SUITE: Final = "2"
# The first suite's version: what a stored categories result without a suite measured.
FIRST_SUITE: Final = "1"


@dataclass(frozen=True)
class PromptLength:
    """A prompt's stated length: characters, and tokens of the suite's tokenizer where stated."""

    chars: int
    tokens: int | None


@dataclass(frozen=True)
class PromptSuite:
    """A suite: its version, its categories in order with their prompts, its warm-ups, each
    prompt's stated length, and the categories labelled as sharing a prefix (with its length)."""

    version: str
    categories: dict[str, tuple[str, ...]]
    warmup: tuple[str, ...]
    lengths: dict[str, PromptLength]
    shared_prefixes: dict[str, int]
    max_shared_prefix: int | None
    tokenizer: str | None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.categories)

    @property
    def fewest_prompts(self) -> int:
        """The smallest number of prompts any category has."""
        return min(len(prompts) for prompts in self.categories.values())

    @property
    def label(self) -> str:
        """The suite in words, as results and pages name it: 'specboard suite 2'."""
        return f"specboard suite {self.version}"


def _entry(item: object) -> tuple[str, PromptLength]:
    # Suite 1 stores bare strings; later suites store {"text", "chars", "tokens"}.
    if isinstance(item, str):
        return item, PromptLength(chars=len(item), tokens=None)
    assert isinstance(item, dict)
    text = item["text"]
    if item["chars"] != len(text):
        raise ValueError(f"a prompt states {item['chars']} characters but has {len(text)}")
    return text, PromptLength(chars=item["chars"], tokens=item.get("tokens"))


@functools.cache
def load_suite(version: str = CURRENT_SUITE) -> PromptSuite:
    """A stored suite (the current one by default), read and checked once."""
    if version not in SUITE_FILES:
        raise ValueError(f"unknown prompt suite {version!r}; known: {', '.join(SUITE_FILES)}")
    text = resources.files(__name__).joinpath(SUITE_FILES[version]).read_text("utf-8")
    data = json.loads(text)
    if str(data["version"]) != version:
        raise ValueError(f"{SUITE_FILES[version]} says it is suite {data['version']}")
    lengths: dict[str, PromptLength] = {}
    categories: dict[str, tuple[str, ...]] = {}
    shared: dict[str, int] = {}
    for category in data["categories"]:
        entries = [_entry(item) for item in category["prompts"]]
        categories[category["name"]] = tuple(prompt for prompt, _ in entries)
        lengths |= dict(entries)
        if category.get("shared_prefix"):
            shared[category["name"]] = int(category["shared_prefix"]["chars"])
    warmups = [_entry(item) for item in data["warmup"]]
    lengths |= dict(warmups)
    return PromptSuite(
        version=version,
        categories=categories,
        warmup=tuple(prompt for prompt, _ in warmups),
        lengths=lengths,
        shared_prefixes=shared,
        max_shared_prefix=data.get("max_shared_prefix"),
        tokenizer=data.get("tokenizer"),
    )


def sample_prompts(
    suite: PromptSuite, categories: Sequence[str], *, size: int, seed: int
) -> list[tuple[int, str, str]]:
    """(point, category, prompt) of a seeded sample: per category in the order given, ``size``
    of its prompts drawn without replacement from ``seed`` and kept in the suite's order. The
    same suite, categories, size and seed always give the same sample."""
    rng = np.random.default_rng(seed)
    chosen = []
    for index, category in enumerate(categories):
        prompts = suite.categories[category]
        if size > len(prompts):
            raise ValueError(f"category {category!r} has {len(prompts)} prompts, not {size}")
        picked = sorted(rng.choice(len(prompts), size=size, replace=False))
        chosen += [(index, category, prompts[int(i)]) for i in picked]
    return chosen


def prompts_up_to(suite: PromptSuite, max_bytes: int) -> list[str]:
    """Every categorised prompt of a suite whose UTF-8 text is at most ``max_bytes`` long, in
    the suite's order (the concurrency protocol's pool of suite prompts)."""
    return [
        prompt
        for prompts in suite.categories.values()
        for prompt in prompts
        if len(prompt.encode()) <= max_bytes
    ]
