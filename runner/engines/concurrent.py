"""One wave of the concurrency protocol: several requests in flight at once on one llama-server.

This module owns sending a wave (``send_wave``: one thread and one connection per request, all
released together by a barrier, so that the slots decode in the same batches) and turning what
came back into per-request records (``wave_records``).

What is per request and what is not. Each response's own ``timings`` are per slot: prompt and
generation times, generated tokens, ``draft_n`` and ``draft_n_accepted`` stay exact per request.
The verify-step and per-position acceptance counters exist only in ``/metrics``, one scrape for
the whole server, so a wave's delta cannot be split by request. It is shared out among the wave's
requests in proportion to their drafted (verify steps) and accepted (per position) tokens, by
largest remainder, so that any whole wave, and so every level and the summary, pools to the exact
counts (tau, acceptance by position); a single request's share is no measurement, and its ``tau``
is therefore null. A wave of one request is measured as every other protocol's requests are.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from runner.engines.measure import (
    Completion,
    SpecCounters,
    build_record,
    complete,
    scrape,
)
from runner.protocols import RequestSpec

# How long the wave's threads wait for each other at the start line.
BARRIER_TIMEOUT_S = 60.0


def share_out(total: int, weights: Sequence[int | float]) -> list[int]:
    """``total`` split into whole shares proportional to ``weights`` that sum to ``total``
    exactly (largest remainder; equal weights where every weight is zero)."""
    count = len(weights)
    if count == 0:
        return []
    weight_sum = float(sum(weights))
    exact = [total * w / weight_sum for w in weights] if weight_sum > 0 else [total / count] * count
    shares = [int(value) for value in exact]
    by_remainder = sorted(range(count), key=lambda i: (exact[i] - shares[i], -i), reverse=True)
    for index in by_remainder[: total - sum(shares)]:
        shares[index] += 1
    return shares


def wave_records(
    specs: Sequence[RequestSpec], completions: Sequence[Completion], delta: SpecCounters
) -> list[dict[str, Any]]:
    """The wave's per-request records, with the wave's /metrics delta shared out (module)."""
    drafted = [int(done.timings.get("draft_n", 0)) for done in completions]
    accepted = [int(done.timings.get("draft_n_accepted", 0)) for done in completions]
    steps = share_out(int(round(delta.verify_steps)), drafted)
    positions = {
        position: share_out(int(round(count)), accepted)
        for position, count in sorted(delta.accepted_per_position.items())
    }
    records = []
    for index, (spec, done) in enumerate(zip(specs, completions, strict=True)):
        counters = SpecCounters(
            draft_tokens=float(drafted[index]),
            accepted_tokens=float(accepted[index]),
            verify_steps=float(steps[index]),
            accepted_per_position={p: float(shares[index]) for p, shares in positions.items()},
        )
        record = build_record(
            spec=spec,
            timings=done.timings,
            tokens=done.tokens,
            wall_s=done.wall_s,
            ttft_s=done.ttft_s,
            ttft_source="client stream" if spec.stream else "server prompt time",
            counters=counters,
            chunk_arrival_s=done.chunk_arrival_s,
            text=done.text,
        )
        # Not a per-request measurement under concurrency (see the module).
        record["tau"] = None
        records.append(record)
    return records


def _in_flight_at_once(
    base_url: str, specs: Sequence[RequestSpec], *, timeout_s: float
) -> list[Completion]:
    start_line = threading.Barrier(len(specs), timeout=BARRIER_TIMEOUT_S)
    # Each request its own connection, opened before the start line.
    clients = [
        httpx.Client(timeout=timeout_s, limits=httpx.Limits(max_keepalive_connections=0))
        for _ in specs
    ]

    def send(client: httpx.Client, spec: RequestSpec) -> Completion:
        start_line.wait()
        return complete(client, base_url, spec, timeout_s=timeout_s)

    try:
        with ThreadPoolExecutor(max_workers=len(specs), thread_name_prefix="wave") as pool:
            futures = [
                pool.submit(send, client, spec) for client, spec in zip(clients, specs, strict=True)
            ]
            try:
                return [future.result() for future in futures]
            except BaseException:
                start_line.abort()
                raise
    finally:
        for client in clients:
            client.close()


def send_wave(
    client: httpx.Client, base_url: str, specs: Sequence[RequestSpec], *, timeout_s: float
) -> list[dict[str, Any]]:
    """Send every request of a wave at once and return their records, in the wave's order."""
    before = scrape(client, base_url)
    completions = _in_flight_at_once(base_url, specs, timeout_s=timeout_s)
    delta = scrape(client, base_url).minus(before)
    return wave_records(specs, completions, delta)
