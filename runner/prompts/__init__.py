"""The project's own prompt suite for the categories protocol, stored as package data.

``categories.json`` holds completion-style prompts (the real test model is a base model, so each
prompt is text to continue: a code file's start, a worked example, a document followed by
"Summary:"), written for this project, grouped by task category, plus a few warm-up prompts that
belong to no category. This module reads it once and says which categories exist.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class PromptSuite:
    """The suite: its version, its categories in order with their prompts, its warm-ups."""

    version: str
    categories: dict[str, tuple[str, ...]]
    warmup: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.categories)

    @property
    def fewest_prompts(self) -> int:
        """The smallest number of prompts any category has."""
        return min(len(prompts) for prompts in self.categories.values())


@functools.cache
def load_suite() -> PromptSuite:
    """The stored suite, read and checked once."""
    text = resources.files(__name__).joinpath("categories.json").read_text("utf-8")
    data = json.loads(text)
    categories = {entry["name"]: tuple(entry["prompts"]) for entry in data["categories"]}
    return PromptSuite(
        version=str(data["version"]), categories=categories, warmup=tuple(data["warmup"])
    )
