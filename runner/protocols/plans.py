"""Turn a protocol into the exact list of requests to send: the request plans.

The quick protocol repeats one prompt, which is fair to every speculative type but the n-gram
ones: their caches (``ngram-mod``'s hash pool, ``ngram-cache``, the n-gram maps) outlive a request
in llama-server, which has no call to clear them, so by the second run they have learned the
answer and draft it whole. For configs with an n-gram type every quick-protocol request therefore
gets its own exact token-id prompt, drawn from the protocol's seed; the paired baseline runs the
same plan. ``repeated_prompt`` says, from the records' prompt hashes, whether an n-gram result
was still measured on a repeated prompt.

The concurrency protocol plans waves: per level, ``warmup`` then ``rounds`` waves of ``level``
requests, each with its own prompt (exact token ids, or with ``prompts: "suite"`` a distinct text
of the prompt suite drawn from the seed); ``waves`` groups a plan back into them. The categories
protocol plans a seeded sample of its suite's text prompts (runner/prompts/) category by
category, every prompt distinct, after warm-ups on prompts that belong to no category.

A paired run (a config and its baseline in one invocation) splits each stage's measured requests
into rounds (``split_rounds``, ``PAIRED_ROUNDS`` of them by default) whose sides run in ABBA order
(``round_orders``), so that a drift of clocks or power over the run falls on both sides alike;
``runner.benchmark`` runs them and records the order. What a plan costs in tokens is
``runner.protocols.budget``'s business.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from runner.prompts import load_suite, sample_prompts
from runner.protocols.schema import (
    CategoriesProtocol,
    ConcurrencyProtocol,
    QualityProtocol,
    QuickProtocol,
)
from runner.quality import tasks as quality_tasks
from runner.quality import warmup_tasks as quality_warmups

if TYPE_CHECKING:
    # Only a type here: runner.config imports the protocol schema from this package.
    from runner.config import BenchmarkConfig


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

    def body(self) -> dict:
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


def _token_prompt(length: int, *, vocab_size: int, rng: np.random.Generator) -> list[int]:
    # Skip the low ids, where tokenizers keep control and byte tokens.
    low = min(1000, vocab_size // 4)
    return rng.integers(low, vocab_size - 1, size=length).tolist()


def text_tokens(prompt: str) -> int:
    """A text prompt's length in tokens as the plans and the token budget estimate it: four
    characters a token."""
    return max(1, len(prompt) // 4)


def category_prompts(protocol: CategoriesProtocol) -> list[tuple[int, str, str]]:
    """(point, category, prompt) of every measured request: per category, prompts_per_category
    of its suite's prompts, drawn from the seed and kept in the suite's order."""
    return sample_prompts(
        load_suite(protocol.suite),
        protocol.categories,
        size=protocol.prompts_per_category,
        seed=protocol.seed,
    )


def concurrency_suite_prompts(protocol: ConcurrencyProtocol) -> list[str]:
    """The suite prompts of a concurrency plan in the order sent, one per request, every one
    distinct: a permutation of the protocol's pool drawn from its seed ([] for token ids)."""
    pool = protocol.suite_pool
    if not pool:
        return []
    needed = sum(protocol.levels) * (protocol.warmup + protocol.rounds)
    order = np.random.default_rng(protocol.seed).permutation(len(pool))[:needed]
    return [pool[int(i)] for i in order]


def _concurrency_plan(
    config: BenchmarkConfig, protocol: ConcurrencyProtocol, *, vocab_size: int
) -> list[RequestSpec]:
    rng = np.random.default_rng(protocol.seed)
    texts = iter(concurrency_suite_prompts(protocol))
    requests = []
    for index, level in enumerate(protocol.levels):
        rounds = [("warmup", r) for r in range(protocol.warmup)]
        rounds += [("measure", r) for r in range(protocol.rounds)]
        for phase, wave in rounds:
            for _ in range(level):
                prompt: str | list[int]
                if protocol.suite_pool:
                    prompt, length = next(texts), None
                else:
                    prompt = _token_prompt(protocol.input_tokens, vocab_size=vocab_size, rng=rng)
                    length = protocol.input_tokens
                requests.append(
                    RequestSpec(
                        phase,
                        index,
                        length,
                        protocol.output_tokens,
                        prompt,
                        protocol.seed,
                        config.stream,
                        round=wave,
                        concurrency=level,
                    )
                )
    return requests


def _categories_plan(config: BenchmarkConfig, protocol: CategoriesProtocol) -> list[RequestSpec]:
    warmups = [
        RequestSpec("warmup", 0, None, protocol.output_tokens, text, protocol.seed, config.stream)
        for text in load_suite(protocol.suite).warmup[: protocol.warmup]
    ]
    return warmups + [
        RequestSpec(
            "measure",
            index,
            None,
            protocol.output_tokens,
            text,
            protocol.seed,
            config.stream,
            category=category,
        )
        for index, category, text in category_prompts(protocol)
    ]


def _quality_plan(config: BenchmarkConfig, protocol: QualityProtocol) -> list[RequestSpec]:
    # Warm-ups on tasks of their own, then every task once in order (runner.quality): measured
    # request i asks task i, which is how a record is matched with its task.
    def spec(phase: str, prompt: str) -> RequestSpec:
        return RequestSpec(
            phase, 0, None, protocol.max_tokens, prompt, protocol.task_seed, config.stream
        )

    kinds = protocol.kinds
    warmups = quality_warmups(seed=protocol.task_seed, count=protocol.warmup, kinds=kinds)
    measured = quality_tasks(seed=protocol.task_seed, count=protocol.tasks, kinds=kinds)
    return [spec("warmup", task.prompt) for task in warmups] + [
        spec("measure", task.prompt) for task in measured
    ]


def waves(plan: Sequence[RequestSpec]) -> list[list[RequestSpec]]:
    """The plan as the groups sent at once: one wave per concurrency round, else one request."""
    grouped: list[list[RequestSpec]] = []
    for key, specs in groupby(plan, key=lambda s: (s.phase, s.point, s.round, s.concurrency)):
        if key[3] is None:
            grouped += [[spec] for spec in specs]
        else:
            grouped.append(list(specs))
    return grouped


# How many rounds a paired run splits each stage's measured requests into by default: AB then BA.
PAIRED_ROUNDS = 2

Side = Literal["speculative", "baseline"]


def round_orders(rounds: int) -> list[tuple[Side, Side]]:
    """Which side runs first in each of ``rounds`` rounds: alternating (ABBA...), and always
    ending on the baseline, whose engine, still loaded, then takes the margins where the two
    outputs diverged (runner.fidelity). Two rounds are baseline, speculative | speculative,
    baseline; one is speculative, baseline (the order before rounds)."""
    return [
        ("baseline", "speculative") if (rounds - 1 - number) % 2 else ("speculative", "baseline")
        for number in range(rounds)
    ]


def baseline_sessions(rounds: int) -> int:
    """How many engine sessions the baseline takes over ``rounds`` rounds in ``round_orders``:
    a side's adjacent turns (ABBA's middle pair) share one session."""
    turns = [side for order in round_orders(rounds) for side in order]
    return sum(1 for side, _ in groupby(turns) if side == "baseline")


def split_rounds(specs: Sequence[RequestSpec], rounds: int) -> list[list[int]]:
    """Each round's measured requests, as indices among ``specs``' measured ones in plan order.

    Every point's (depth's, level's, category's) measured waves are split into ``rounds``
    consecutive runs, the earlier ones one wave longer where they do not divide evenly, so each
    point is measured in every round it has requests for; rounds left empty are dropped.
    """
    if rounds < 1:
        raise ValueError("a paired run needs at least one round")
    per_point: dict[int, list[list[int]]] = {}
    index = 0
    for wave in waves(specs):
        if wave[0].phase != "measure":
            continue
        per_point.setdefault(wave[0].point, []).append(list(range(index, index + len(wave))))
        index += len(wave)
    chunks: list[list[int]] = [[] for _ in range(rounds)]
    for point_waves in per_point.values():
        size, extra = divmod(len(point_waves), rounds)
        start = 0
        for number in range(rounds):
            end = start + size + (number < extra)
            chunks[number] += [i for wave in point_waves[start:end] for i in wave]
            start = end
    return [sorted(chunk) for chunk in chunks if chunk]


def plan_requests(config: BenchmarkConfig, *, vocab_size: int) -> list[RequestSpec]:
    """Every request of the protocol in order, warm-ups first at each depth.

    The quick protocol repeats its text prompt, except for configs with an n-gram type, whose
    requests each get a distinct token-id prompt of about the text's length (see the module).
    """
    protocol = config.protocol
    if isinstance(protocol, ConcurrencyProtocol):
        return _concurrency_plan(config, protocol, vocab_size=vocab_size)
    if isinstance(protocol, CategoriesProtocol):
        return _categories_plan(config, protocol)
    if isinstance(protocol, QualityProtocol):
        return _quality_plan(config, protocol)
    if isinstance(protocol, QuickProtocol):
        phases = ["warmup"] * protocol.warmup + ["measure"] * protocol.runs
        if not config.learns_across_requests:
            return [
                RequestSpec(
                    phase,
                    0,
                    None,
                    protocol.n_predict,
                    protocol.prompt,
                    protocol.seed,
                    config.stream,
                )
                for phase in phases
            ]
        rng = np.random.default_rng(protocol.seed)
        length = text_tokens(protocol.prompt)
        return [
            RequestSpec(
                phase,
                0,
                length,
                protocol.n_predict,
                _token_prompt(length, vocab_size=vocab_size, rng=rng),
                protocol.seed,
                config.stream,
            )
            for phase in phases
        ]
    rng = np.random.default_rng(protocol.seed)
    requests = []
    for index, point in enumerate(protocol.points):
        for phase in ["warmup"] * point.warmup + ["measure"] * point.requests:
            prompt = _token_prompt(point.input_tokens, vocab_size=vocab_size, rng=rng)
            requests.append(
                RequestSpec(
                    phase,
                    index,
                    point.input_tokens,
                    point.output_tokens,
                    prompt,
                    protocol.seed,
                    config.stream,
                )
            )
    return requests


def repeated_prompt(config: BenchmarkConfig, requests: Sequence[Mapping[str, Any]]) -> bool | None:
    """For an n-gram config: whether two measured requests shared a prompt (the n-gram state
    could have learned the answer); None for other configs, or records without prompt hashes."""
    if not config.learns_across_requests:
        return None
    hashes = [record.get("prompt_sha256") for record in requests]
    if not hashes or None in hashes:
        return None
    return len(set(hashes)) < len(hashes)
