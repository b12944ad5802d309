"""The fidelity grade of a speculative run: how closely its greedy output follows the baseline's.

Greedy speculative decoding is lossless in exact arithmetic, but on real hardware the target's
batched verification sums in another order than one-token decoding, so where the baseline's top
two candidates are nearly tied the run can pick the other one, and the two outputs part from
there. A bit-identity flag calls such a run lossy. This module grades it instead, per run: the
share of requests identical to the baseline, the mean identical prefix (tokens before the first
divergence; a whole request when identical), and every divergence of each request classified by
the baseline's own top-2 margin at that position. The margin is the gap, in nats, between the
baseline's two most likely tokens' log-probabilities there (their logit gap), read in a separate,
unmeasured pass over the baseline (llama-server's ``n_probs``), so the measured baseline keeps
its GPU-side sampling and its timings:

- ``near tie``: the gap was below ``NEAR_TIE_MARGIN`` and the run chose the baseline's runner-up,
  a flip that floating-point order explains;
- ``mismatch``: anything else (a clear winner overruled, a token outside the baseline's top two,
  outputs of different lengths), which numerics do not explain;
- ``unclassified``: no margin is known for that position (an engine or file without the pass), or
  the rest of a request after a near tie could not be judged (no continuation, or the bound of
  ``MAX_CONTINUATIONS`` was reached): it is recorded at the first unjudged position.

Every divergence, not only the first (``judge_divergences``): after a near tie at position p the
two outputs follow different texts, so comparing the rest with the baseline's own output says
nothing. The baseline is continued instead from the speculative output's prefix (the prompt and
the run's tokens up to and including p, sent as token ids, greedy, with ``n_probs``) and its
continuation is compared with the run's tokens from p + 1 on; the next divergence is classified by
the continuation's own top-2 margin there, and so on until the request ends. A mismatch or an
unclassified divergence ends the judging of a request (its verdict is already decided). A
request's class is its worst divergence's (mismatch, then unclassified, then near tie), so "near
ties only" holds only when every divergence of every request is a near tie. A stored record
without the list (a file written before it) was judged at its first divergence only: a near tie
there with tokens after it counts as unclassified, since the rest was never judged.

The threshold is measured, not assumed: ``python bench/fidelity_noise_floor.py --real`` runs the
baseline against itself and against the model drafting for itself (lossless in exact arithmetic)
and reports the margins at every flip and how far batched evaluation moves a margin
(docs/FIDELITY.md). On the CPU build (b11434) the tiny F32 model's margins move by at most 0.003
nats and its one flip was at 0.0007; Gemma 3 270M Q4_K_M's move by a median 0.108, a p99 of 0.62
and at most 0.81 nats (441 positions), and its self-draft flipped twice at 0.16 after a near tie,
which a 0.1-nat threshold graded mismatches. ``NEAR_TIE_MARGIN`` is therefore 1.0 nats, above the
largest shift measured (9.6% of that model's positions have a margin below it). On a CUDA
build (b11434, H100, SmolLM2-135M-Instruct Q4_1; docs/gpu-results/h100-dflash-real/) the same
bench found the floor above it: margins move by a median 0.22, p99 1.21 and at most 2.29 nats,
and the model drafting for itself flipped tokens at up to 0.70 nats and five times picked a token
outside the baseline's top two. So the threshold is not trusted there: the site reads a CUDA
run's near ties as unclassified (``NEAR_TIE_MEASURED_BACKENDS``).
A grade records the threshold it was judged with (``FidelityGrade.near_tie_margin``), so results
graded at 0.1 before keep their grade and say 0.1.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Below this top-2 log-probability gap (nats), a flipped token counts as a near tie: the runner-up
# was at least exp(-1.0) = 0.37 times as likely as the winner. Set from the measured noise floor
# (docs/FIDELITY.md, CPU b11434): batched evaluation alone moves Gemma 3 270M Q4_K_M's margins by
# a median 0.108, p99 0.62, max 0.81 nats (F32 weights: at most 0.003), so 0.1 graded the model
# drafting for itself a mismatch. On CUDA the floor measured above it (max shift 2.29 nats).
NEAR_TIE_MARGIN = 1.0
# The engine backends on which that noise floor was measured (bench/fidelity_noise_floor.py).
# Elsewhere a flip below the threshold is not known to be one that floating-point order explains,
# so the site reads such a near tie as unclassified (leaderboard.verdicts.fidelity); add a
# backend here once the bench has measured its floor below NEAR_TIE_MARGIN (CUDA b11434 did not:
# docs/FIDELITY.md).
NEAR_TIE_MEASURED_BACKENDS: Final = frozenset({"cpu"})
# The server writes log(0) as the lowest float; a gap this wide is as good as infinite.
MAX_MARGIN = 1000.0
# How many candidates per position the margin pass asks llama-server for.
MARGIN_CANDIDATES = 2
# Continuations of the baseline per request, one after each near tie: past the bound the rest of
# the request is unclassified. Each costs at most one request's generation in the unmeasured pass.
MAX_CONTINUATIONS = 16
# The longest divergence list a stored record may carry (the bound leaves room to raise it).
MAX_DIVERGENCES = 64
# A request's class is its worst divergence's.
_SEVERITY: Final = {"near tie": 0, "unclassified": 1, "mismatch": 2}

NEAR_TIE: Final = "near tie"
MISMATCH: Final = "mismatch"
UNCLASSIFIED: Final = "unclassified"
DivergenceKind = Literal["near tie", "mismatch", "unclassified"]

_Count = Annotated[int, Field(ge=0, le=100_000)]
_Share = Annotated[float, Field(allow_inf_nan=False, ge=0, le=1)]


@dataclass(frozen=True)
class TopTwo:
    """The baseline at one output position: its greedy token, the runner-up and their gap."""

    token: int
    runner_up: int | None
    margin: float | None


class Divergence(BaseModel):
    """One divergence of a request from the baseline: where, the baseline's margin there, its class."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    position: Annotated[int, Field(ge=0, le=10**9)]
    margin: Annotated[float, Field(allow_inf_nan=False, ge=0, le=MAX_MARGIN)] | None
    kind: DivergenceKind


# The baseline's top two at each position after a prefix of the run's output, continued greedily
# from the prompt and the run's tokens up to and including the given position; None if unknown.
Continuation = Callable[[int], Sequence[TopTwo] | None]


class FidelityGrade(BaseModel):
    """How a run's greedy output compares with its baseline's, request by request."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # identical: every request; near ties only: every divergence a near tie; mismatch: at least
    # one real mismatch; unclassified: divergences whose margin is unknown, none a mismatch.
    verdict: Literal["identical", "near ties only", "mismatch", "unclassified"]
    requests: Annotated[int, Field(ge=1, le=100_000)]
    identical_requests: _Count
    identical_share: _Share
    # Tokens before the first divergence, averaged over requests (a whole request if identical).
    mean_identical_prefix_tokens: Annotated[float, Field(allow_inf_nan=False, ge=0, le=1e9)]
    # The same prefix as a share of each request's generated tokens, averaged over requests.
    mean_identical_prefix_share: _Share
    near_ties: _Count
    mismatches: _Count
    unclassified: _Count
    near_tie_margin: Annotated[float, Field(allow_inf_nan=False, ge=0, le=MAX_MARGIN)]

    @model_validator(mode="after")
    def _counts_add_up(self) -> FidelityGrade:
        counted = self.identical_requests + self.near_ties + self.mismatches + self.unclassified
        if counted != self.requests:
            raise ValueError(
                f"identical, near-tie, mismatched and unclassified requests add up to {counted}, "
                f"not {self.requests}"
            )
        if not math.isclose(self.identical_share, self.identical_requests / self.requests):
            raise ValueError(f"identical_share {self.identical_share} is not identical / requests")
        if self.verdict != _verdict(self.near_ties, self.mismatches, self.unclassified):
            raise ValueError(f"verdict {self.verdict!r} does not follow from the counts")
        return self


def _verdict(near_ties: int, mismatches: int, unclassified: int) -> str:
    if mismatches:
        return "mismatch"
    if unclassified:
        return "unclassified"
    return "near ties only" if near_ties else "identical"


def top_two_from_probabilities(probabilities: Sequence[Mapping[str, Any]]) -> list[TopTwo]:
    """Each position's top two from llama-server's ``completion_probabilities`` (n_probs >= 2).

    Each entry is ``{"id", "logprob", "top_logprobs": [{"id", "logprob"}, ...]}``, the top list
    sorted by logit, as b11434 returns it with ``post_sampling_probs`` off.
    """
    positions = []
    for entry in probabilities:
        token = int(entry["id"])
        candidates = entry.get("top_logprobs") or []
        others = [c for c in candidates if int(c["id"]) != token]
        if len(candidates) < 2 or not others:
            positions.append(TopTwo(token, None, None))
            continue
        runner_up = others[0]
        best = max(float(c["logprob"]) for c in candidates)
        margin = min(max(best - float(runner_up["logprob"]), 0.0), MAX_MARGIN)
        positions.append(TopTwo(token, int(runner_up["id"]), margin))
    return positions


def classify_divergence(
    position: int | None,
    *,
    tokens: Sequence[int],
    baseline_tokens: Sequence[int],
    top_two: TopTwo | None,
) -> tuple[DivergenceKind | None, float | None]:
    """(kind, margin) of a divergence from the baseline's (or a continuation's) tokens at position,
    by its top two there; (None, None) for no divergence."""
    if position is None:
        return None, None
    if position >= len(tokens) or position >= len(baseline_tokens):
        # One output stopped before the other: no token choice explains that.
        return MISMATCH, None
    # A margin pass that did not retrace the baseline's own token measured something else.
    if top_two is None or top_two.token != baseline_tokens[position]:
        return UNCLASSIFIED, None
    if (
        top_two.margin is not None
        and top_two.margin < NEAR_TIE_MARGIN
        and tokens[position] == top_two.runner_up
    ):
        return NEAR_TIE, top_two.margin
    return MISMATCH, top_two.margin


def _next_divergence(tokens: Sequence[int], reference: Sequence[int], start: int) -> int | None:
    """The first position from start where the two differ (or the shorter one ends); None."""
    for index in range(start, min(len(tokens), len(reference))):
        if tokens[index] != reference[index]:
            return index
    return None if len(tokens) == len(reference) else min(len(tokens), len(reference))


def judge_divergences(
    tokens: Sequence[int],
    baseline_tokens: Sequence[int],
    *,
    first: TopTwo | None,
    continuation: Continuation | None = None,
    limit: int = MAX_CONTINUATIONS,
) -> list[Divergence]:
    """Every divergence of a run's output from the baseline's, each classified (module docstring).

    ``first`` is the baseline's top two at the first divergence; ``continuation(p)`` the
    baseline's top two at each position after the run's tokens[: p + 1], continued greedily (at
    most ``limit`` calls). Without it, or when it gives nothing, the rest of a request after a
    near tie is unclassified from p + 1 on. Empty when the outputs are identical.
    """
    judged: list[Divergence] = []
    reference: Sequence[int] = baseline_tokens
    # The baseline's top two from where the current reference starts (None: only ``first``).
    steps: Sequence[TopTwo] | None = None
    start = 0
    position = _next_divergence(tokens, reference, 0)
    continued = 0
    while position is not None:
        top_two = _baseline_top_two(position, first=first, steps=steps, start=start)
        kind, margin = classify_divergence(
            position, tokens=tokens, baseline_tokens=reference, top_two=top_two
        )
        judged.append(Divergence(position=position, margin=margin, kind=kind or UNCLASSIFIED))
        start = position + 1
        if kind != NEAR_TIE or start >= len(tokens):
            break
        steps = continuation(position) if continuation is not None and continued < limit else None
        continued += 1
        if steps is None:
            judged.append(Divergence(position=start, margin=None, kind=UNCLASSIFIED))
            break
        # The baseline from the run's own prefix: its tokens are the reference from here on.
        reference = [*tokens[:start], *(step.token for step in steps)]
        position = _next_divergence(tokens, reference, start)
    return judged


def _baseline_top_two(
    position: int, *, first: TopTwo | None, steps: Sequence[TopTwo] | None, start: int
) -> TopTwo | None:
    """The baseline's top two at a divergence: ``first`` before any continuation, else the
    continued step's from ``start`` (None past its last step)."""
    if steps is None:
        return first
    return steps[position - start] if position - start < len(steps) else None


def request_kind(record: Mapping[str, Any]) -> DivergenceKind | None:
    """A request record's class: its worst divergence's, None when identical to the baseline.

    Read from its ``divergences`` list when it has one; a record without it (written before) was
    judged at its first divergence only, so a near tie there with tokens after it is unclassified.
    """
    divergences = record.get("divergences")
    if divergences:
        kinds = [d.kind if isinstance(d, Divergence) else d["kind"] for d in divergences]
        return max(kinds, key=_SEVERITY.__getitem__, default=None)
    first = record.get("first_divergence")
    if first is None:
        return None
    kind: DivergenceKind = record.get("divergence") or UNCLASSIFIED
    if kind == NEAR_TIE and int(first) + 1 < int(record.get("predicted_n") or 0):
        return UNCLASSIFIED
    return kind


def fidelity_grade(records: Sequence[Mapping[str, Any]]) -> FidelityGrade | None:
    """The grade of a run from its request records (first_divergence, divergences, predicted_n).

    Each request counts by its worst divergence (``request_kind``); a record that diverged
    without a classification (an older file) counts as unclassified. None for no records.
    """
    if not records:
        return None
    prefixes: list[int] = []
    shares: list[float] = []
    kinds: list[str | None] = []
    for record in records:
        generated = int(record.get("predicted_n") or 0)
        divergence = record.get("first_divergence")
        prefix = generated if divergence is None else min(int(divergence), generated)
        prefixes.append(prefix)
        shares.append(prefix / generated if generated else 1.0)
        kinds.append(request_kind(record))
    identical = kinds.count(None)
    near_ties, mismatches = kinds.count(NEAR_TIE), kinds.count(MISMATCH)
    unclassified = kinds.count(UNCLASSIFIED)
    return FidelityGrade(
        verdict=_verdict(near_ties, mismatches, unclassified),  # type: ignore[arg-type]
        requests=len(records),
        identical_requests=identical,
        identical_share=identical / len(records),
        mean_identical_prefix_tokens=statistics.fmean(prefixes),
        mean_identical_prefix_share=statistics.fmean(shares),
        near_ties=near_ties,
        mismatches=mismatches,
        unclassified=unclassified,
        near_tie_margin=NEAR_TIE_MARGIN,
    )
