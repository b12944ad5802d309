"""Turn a protocol into the exact list of requests to send, and estimate its token budget."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runner.config import BenchmarkConfig, QuickProtocol


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


def _token_prompt(length: int, *, vocab_size: int, rng: np.random.Generator) -> list[int]:
    # Skip the low ids, where tokenizers keep control and byte tokens.
    low = min(1000, vocab_size // 4)
    return rng.integers(low, vocab_size - 1, size=length).tolist()


def plan_requests(config: BenchmarkConfig, *, vocab_size: int) -> list[RequestSpec]:
    """Every request of the protocol in order, warm-ups first at each depth."""
    protocol = config.protocol
    if isinstance(protocol, QuickProtocol):
        phases = ["warmup"] * protocol.warmup + ["measure"] * protocol.runs
        return [
            RequestSpec(
                phase, 0, None, protocol.n_predict, protocol.prompt, protocol.seed, config.stream
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


def token_budget(config: BenchmarkConfig, *, with_baseline: bool = False) -> dict[str, int]:
    """Prompt and generated tokens the protocol will cost, warm-ups included."""
    protocol = config.protocol
    if isinstance(protocol, QuickProtocol):
        count = protocol.warmup + protocol.runs
        prompt_tokens = count * max(1, len(protocol.prompt) // 4)
        generated = count * protocol.n_predict
    else:
        count = sum(p.warmup + p.requests for p in protocol.points)
        prompt_tokens = sum((p.warmup + p.requests) * p.input_tokens for p in protocol.points)
        generated = sum((p.warmup + p.requests) * p.output_tokens for p in protocol.points)
    factor = 2 if with_baseline else 1
    return {
        "requests": count * factor,
        "prompt_tokens": prompt_tokens * factor,
        "generated_tokens": generated * factor,
        "total_tokens": (prompt_tokens + generated) * factor,
    }
