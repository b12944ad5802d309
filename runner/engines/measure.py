"""Send one request to llama-server and read what it did: timings, tokens, /metrics deltas.

This module owns the per-request record (``build_record``): the project's definitions of
end-to-end tokens per second (decode tok/s is ``runner.stats.decode_rate``), time to first
token, tau and the output's fingerprint (its hash, its distinct 4-gram ratio and its repeating
tail), shared by both engines, and the baseline's unmeasured margin pass (``measure_top_two``,
also continued from a speculative output's prefix, ``continued_prompt``).
``runner.results.RequestRecord`` is the record's validated, public form.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np

from runner.errors import EngineResponseError
from runner.fidelity import MARGIN_CANDIDATES, TopTwo, top_two_from_probabilities
from runner.protocols import RequestSpec
from runner.stats import decode_rate, request_tpot_ms

# The longest cycle the repeating-tail check looks for: an output looping 150-200 tokens keeps a
# high distinct 4-gram ratio, so the ratio alone misses it.
MAX_REPEAT_PERIOD = 512
# Chunk arrivals are kept in milliseconds to this many decimals: the microsecond.
ARRIVAL_DECIMALS = 3

# llama-server's ``timings`` object of a response: its numbers by name (prompt_n, prompt_ms,
# predicted_n, predicted_ms, predicted_per_second, draft_n, draft_n_accepted, ...).
ServerTimings = Mapping[str, float]

_METRIC_LINE = re.compile(r'^llamacpp:(\w+)(?:\{position="(\d+)"\})?\s+([0-9.eE+\-]+)$')


@dataclass
class SpecCounters:
    """Speculative-decoding counters from one /metrics scrape."""

    draft_tokens: float = 0.0
    accepted_tokens: float = 0.0
    verify_steps: float = 0.0
    accepted_per_position: dict[int, float] = field(default_factory=dict)

    def minus(self, earlier: SpecCounters) -> SpecCounters:
        positions = set(self.accepted_per_position) | set(earlier.accepted_per_position)
        return SpecCounters(
            self.draft_tokens - earlier.draft_tokens,
            self.accepted_tokens - earlier.accepted_tokens,
            self.verify_steps - earlier.verify_steps,
            {
                p: self.accepted_per_position.get(p, 0.0)
                - earlier.accepted_per_position.get(p, 0.0)
                for p in sorted(positions)
            },
        )


def parse_metrics(text: str) -> SpecCounters:
    """Read the speculative counters out of llama-server's Prometheus text."""
    counters = SpecCounters()
    for line in text.splitlines():
        match = _METRIC_LINE.match(line.strip())
        if not match:
            continue
        name, position, value = match.group(1), match.group(2), float(match.group(3))
        if name == "spec_decode_num_draft_tokens_total":
            counters.draft_tokens = value
        elif name == "spec_decode_num_accepted_tokens_total":
            counters.accepted_tokens = value
        elif name == "spec_decode_num_drafts_total":
            counters.verify_steps = value
        elif name == "spec_decode_num_accepted_tokens_per_pos_total" and position is not None:
            counters.accepted_per_position[int(position)] = value
    return counters


def scrape(client: httpx.Client, base_url: str) -> SpecCounters:
    response = client.get(f"{base_url}/metrics")
    response.raise_for_status()
    return parse_metrics(response.text)


def distinct_ngram_ratio(tokens: list[int], n: int = 4) -> float:
    """Distinct n-grams over all n-grams: near 0 when output collapses into repetition."""
    if len(tokens) < n + 1:
        return 1.0
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return len(set(grams)) / len(grams)


def repeating_tail(
    tokens: list[int], max_period: int = MAX_REPEAT_PERIOD
) -> tuple[int | None, int]:
    """(period, tokens): the output's longest tail that repeats one cycle of at most max_period
    tokens at least twice over, and its shortest such cycle; (None, 0) when no tail does.

    A tail of t tokens repeats with period p when each of its last t - p tokens equals the token
    p places before it; a loop of period p also repeats with 2p, 3p, ... over the same tail.
    """
    values = np.asarray(tokens, dtype=np.int64)
    n = len(values)
    best_period, best_span = None, 0
    if n < 2:
        return best_period, best_span
    periods = np.arange(1, min(max_period, n // 2) + 1)
    # Only a period whose last token repeats can start a repeating tail.
    for candidate in periods[values[n - 1 - periods] == values[-1]]:
        period = int(candidate)
        differs = np.flatnonzero(values[period:] != values[:-period])
        repeated = n - period - (int(differs[-1]) + 1 if len(differs) else 0)
        span = repeated + period
        if repeated >= period and span > best_span:
            best_period, best_span = period, span
    return best_period, best_span


def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code != 200:
        detail = response.read().decode("utf-8", "replace")[:500]
        raise httpx.HTTPStatusError(
            f"llama-server answered {response.status_code}: {detail}",
            request=response.request,
            response=response,
        )


@dataclass(frozen=True)
class Completion:
    """One finished /completion request as the client saw it: tokens, server timings, clocks."""

    tokens: list[int]
    timings: ServerTimings
    wall_s: float
    ttft_s: float | None
    # When each content chunk of a stream arrived, in seconds after the request was sent; None
    # for a whole response.
    chunk_arrival_s: list[float] | None = None
    # The generated text as the server sent it (the quality protocol scores it, runner.quality).
    text: str = ""


def complete(
    client: httpx.Client, base_url: str, spec: RequestSpec, *, timeout_s: float
) -> Completion:
    """Send one /completion request (streamed or whole) and wait for its tokens and timings."""
    started = time.perf_counter()
    received = _Received(started=started)
    if spec.stream:
        with client.stream(
            "POST", f"{base_url}/completion", json=spec.body(), timeout=timeout_s
        ) as response:
            _raise_for_status(response)
            received.arrivals = []
            for line in response.iter_lines():
                if line.startswith("data: "):
                    received.add_chunk(json.loads(line[6:]))
    else:
        response = client.post(f"{base_url}/completion", json=spec.body(), timeout=timeout_s)
        _raise_for_status(response)
        received.add_body(response.json())
    if not received.timings or "predicted_ms" not in received.timings:
        # Seen with -bs on CUDA in b11434: a stream that ends with no tokens and no timings.
        # A request without server timings cannot be measured; never record it as a result.
        last = received.last
        shown = json.dumps(last)[:300] if last else "nothing"
        raise EngineResponseError(
            f"llama-server returned no timings for a request; last message: {shown}"
        )
    finished = time.perf_counter()
    first = received.first_token_at
    return Completion(
        tokens=received.tokens,
        timings=received.timings,
        wall_s=finished - started,
        ttft_s=(first - started) if first else None,
        chunk_arrival_s=received.arrivals,
        text="".join(received.text),
    )


@dataclass
class _Received:
    """What a /completion response has given so far: its tokens, timings, text and (streamed)
    when each content chunk arrived."""

    started: float
    tokens: list[int] = field(default_factory=list)
    timings: ServerTimings = field(default_factory=dict)
    text: list[str] = field(default_factory=list)
    # The last JSON object llama-server sent (a chunk or the whole body), to show in an error.
    last: dict[str, Any] | None = None
    arrivals: list[float] | None = None
    first_token_at: float | None = None

    def add_chunk(self, chunk: dict[str, Any]) -> None:
        """One streamed chunk: an error, tokens (timed as they arrive), content or timings."""
        self.last = chunk
        if chunk.get("error"):
            raise EngineResponseError(f"llama-server reported an error: {chunk['error']}")
        if chunk.get("tokens"):
            arrived = time.perf_counter()
            if self.first_token_at is None:
                self.first_token_at = arrived
            if self.arrivals is not None:
                self.arrivals.append(arrived - self.started)
            self.tokens.extend(chunk["tokens"])
        if isinstance(chunk.get("content"), str):
            self.text.append(chunk["content"])
        if chunk.get("timings"):
            self.timings = chunk["timings"]

    def add_body(self, body: dict[str, Any]) -> None:
        """A whole response: its tokens, content and timings."""
        self.last = body
        self.tokens = list(body.get("tokens") or [])
        if isinstance(body.get("content"), str):
            self.text.append(body["content"])
        self.timings = body.get("timings") or {}


def measure_request(
    client: httpx.Client, base_url: str, spec: RequestSpec, *, timeout_s: float
) -> dict[str, Any]:
    """Send one /completion request and return its per-request record."""
    before = scrape(client, base_url)
    done = complete(client, base_url, spec, timeout_s=timeout_s)
    delta = scrape(client, base_url).minus(before)
    return build_record(
        spec=spec,
        timings=done.timings,
        tokens=done.tokens,
        wall_s=done.wall_s,
        ttft_s=done.ttft_s,
        ttft_source="client stream" if spec.stream else "server prompt time",
        counters=delta,
        chunk_arrival_s=done.chunk_arrival_s,
        text=done.text,
    )


def continued_prompt(
    prompt: str | list[int], prefix: Sequence[int]
) -> str | list[int] | list[int | str]:
    """A request's prompt followed by output token ids, exactly as llama-server reads them.

    Token-id prompts are extended; a text prompt becomes b11434's mixed prompt ``[text, id, ...]``,
    whose leading string is tokenized as the text alone is (special tokens and BOS included) and
    whose ids follow verbatim (``tokenize_mixed``), so no text round trip can change a token.
    """
    if not prefix:
        return prompt
    if isinstance(prompt, str):
        mixed: list[int | str] = [prompt, *prefix]
        return mixed
    return [*prompt, *prefix]


def measure_top_two(
    client: httpx.Client,
    base_url: str,
    spec: RequestSpec,
    *,
    timeout_s: float,
    prefix: Sequence[int] = (),
) -> list[TopTwo]:
    """The baseline's top two tokens at each position of a request, in an unmeasured pass.

    With ``prefix`` (output tokens, a speculative run's), the baseline is continued greedily from
    the prompt and that prefix: the top two at each position after it, up to the request's end.
    It asks for ``n_probs``, which b11434 serves only with host-side sampling (it turns the
    request's GPU-side sampling off), so it never runs among the measured requests.
    """
    body = dataclasses.replace(spec, stream=False).body() | {"n_probs": MARGIN_CANDIDATES}
    if prefix:
        body |= {
            "prompt": continued_prompt(spec.prompt, prefix),
            "n_predict": spec.output_tokens - len(prefix),
        }
    response = client.post(f"{base_url}/completion", json=body, timeout=timeout_s)
    _raise_for_status(response)
    probabilities = response.json().get("completion_probabilities")
    if not isinstance(probabilities, list):
        raise EngineResponseError("llama-server returned no completion_probabilities for n_probs")
    return top_two_from_probabilities(probabilities)


def _ttft_ms(
    arrivals: list[float] | None, ttft_s: float | None, timings: ServerTimings
) -> float | None:
    """Time to first token: the first streamed chunk's arrival, else the client's measure, else
    the server's prompt time."""
    if arrivals:
        return arrivals[0]
    if ttft_s is not None:
        return ttft_s * 1000.0
    return float(timings["prompt_ms"]) if "prompt_ms" in timings else None


def _verify_figures(counters: SpecCounters) -> dict[str, Any]:
    """The verify steps, tau and the accepted drafts per position the engine's counters gave."""
    steps = int(round(counters.verify_steps))
    accepted = int(round(counters.accepted_tokens))
    return {
        "verify_steps": steps,
        "tau": 1.0 + accepted / steps if steps else None,
        "accepted_per_position": [
            int(round(v)) for _, v in sorted(counters.accepted_per_position.items())
        ],
    }


def _output_figures(tokens: list[int]) -> dict[str, Any]:
    """The output's tokens, their hash, distinct 4-gram ratio and repeating tail (its cycle and
    its length, which runner.stats.is_degenerate reads)."""
    period, repeated = repeating_tail(tokens)
    return {
        "output_tokens": tokens,
        "output_sha256": hashlib.sha256(json.dumps(tokens).encode()).hexdigest(),
        "distinct_4gram_ratio": distinct_ngram_ratio(tokens),
        "repeat_period": period,
        "repeated_tail_tokens": repeated,
    }


def build_record(
    *,
    spec: RequestSpec,
    timings: ServerTimings,
    tokens: list[int],
    wall_s: float,
    ttft_s: float | None,
    counters: SpecCounters,
    ttft_source: str = "client stream",
    chunk_arrival_s: Sequence[float] | None = None,
    text: str | None = None,
) -> dict[str, Any]:
    """One request's measurements, with the definitions the project uses."""
    # A stream's chunk arrivals to the microsecond; its time to first token is the first of them.
    arrivals = (
        None
        if chunk_arrival_s is None
        else [round(moment * 1000.0, ARRIVAL_DECIMALS) for moment in chunk_arrival_s]
    )
    predicted_n = int(timings.get("predicted_n", len(tokens)))
    predicted_ms = float(timings.get("predicted_ms", 0.0))
    record: dict[str, Any] = {
        "phase": spec.phase,
        "point": spec.point,
        "input_tokens": spec.input_tokens,
        "prompt_sha256": spec.prompt_sha256,
        "output_tokens_requested": spec.output_tokens,
        "prompt_n": int(timings.get("prompt_n", 0)),
        "prompt_ms": float(timings.get("prompt_ms", 0.0)),
        "predicted_n": predicted_n,
        "predicted_ms": predicted_ms,
        # runner.stats.decode_rate: the tokens after the first over the server's generation
        # time, which starts at the first token (n - 1 decode steps, like llama-bench's tg).
        "decode_tokens_per_second": decode_rate(predicted_n, predicted_ms),
        "server_predicted_per_second": timings.get("predicted_per_second"),
        # The seed's definition: completion tokens over client wall time, prefill and HTTP included.
        "end_to_end_tokens_per_second": predicted_n / wall_s if wall_s else None,
        "ttft_ms": _ttft_ms(arrivals, ttft_s, timings),
        "ttft_source": ttft_source,
        "wall_ms": wall_s * 1000.0,
        # The server leaves these out when nothing was drafted: absent means 0.
        "draft_n": int(timings.get("draft_n", 0)),
        "draft_n_accepted": int(timings.get("draft_n_accepted", 0)),
        **_verify_figures(counters),
        **_output_figures(tokens),
        "stopped_early": predicted_n < spec.output_tokens,
        # When each streamed content chunk arrived (ms after sending; runner.stats reads the
        # inter-token latency from their gaps), and the time per output token.
        "chunk_arrival_ms": arrivals,
    }
    record["tpot_ms"] = request_tpot_ms(record)
    if text is not None:
        # The generated text, for the quality protocol's scoring (runner.protocols.quality); like the
        # output tokens, runner.benchmark keeps it out of the result's records.
        record["output_text"] = text
    return record
