"""One measured request (``RequestRecord``, with its quality score where the protocol scores
it), checked against itself: its rates against its timings, its clocks against each other, its
draft counts against the engine's rules and its latency against its streamed chunks."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from runner import stats
from runner.agreement import clock_slack, close, shown
from runner.config import MAX_N_MAX
from runner.fidelity import MAX_DIVERGENCES, NEAR_TIE, Divergence, DivergenceKind
from runner.protocols import MAX_CONCURRENCY
from runner.results.fields import (
    MAX_POINTS,
    MAX_REQUESTS,
    MAX_TOKENS_STREAMED,
    Amount,
    Sha256,
    Share,
    ShortText,
    Text,
    TokenCount,
    _Strict,
)


class QualityScore(_Strict):
    """One quality-protocol request scored (``runner.protocols.quality.score``): its task, the expected
    answer (computed by the project), the output text, the answer extracted from it and whether
    it is correct. ``runner.evidence`` regenerates the task and scores the text again."""

    task_id: ShortText
    kind: ShortText
    expected: ShortText
    output_text: Text
    extracted: ShortText
    correct: bool


class RequestRecord(_Strict):
    """One measured request, as ``runner.engines.measure.build_record`` defines its figures."""

    phase: Literal["warmup", "measure"]
    point: Annotated[int, Field(ge=0, lt=MAX_POINTS)]
    input_tokens: TokenCount | None
    output_tokens_requested: TokenCount
    prompt_n: TokenCount
    prompt_ms: Amount
    predicted_n: TokenCount
    predicted_ms: Amount
    decode_tokens_per_second: Amount | None
    server_predicted_per_second: Amount | None
    end_to_end_tokens_per_second: Amount | None
    ttft_ms: Amount | None
    ttft_source: Literal["client stream", "server prompt time", "in process"] | None = None
    wall_ms: Amount
    draft_n: TokenCount
    draft_n_accepted: TokenCount
    verify_steps: TokenCount
    tau: Amount | None
    accepted_per_position: Annotated[list[TokenCount], Field(max_length=MAX_N_MAX)]
    output_sha256: Sha256
    distinct_4gram_ratio: Share
    stopped_early: bool
    index: Annotated[int, Field(ge=0, lt=MAX_REQUESTS)]
    first_divergence: TokenCount | None
    # Prompt hash and repeating tail (runner.engines.measure); divergence class (runner.fidelity).
    prompt_sha256: Sha256 | None = None
    repeat_period: TokenCount | None = None
    repeated_tail_tokens: TokenCount | None = None
    divergence: DivergenceKind | None = None
    divergence_margin: Amount | None = None
    # Every divergence, judged (runner.fidelity.judge_divergences); absent in older files, whose
    # grade judged the first one only. The first entry is first_divergence, divergence, margin.
    divergences: Annotated[list[Divergence], Field(max_length=MAX_DIVERGENCES)] | None = None
    # NVML's energy counter across the request (runner.energy); None off CUDA or without NVML.
    energy_joules: Amount | None = None
    # The concurrency protocol's wave (round) and requests in flight in it; the categories
    # protocol's prompt category (runner.protocols, docs/PROTOCOLS.md).
    round: Annotated[int, Field(ge=0, lt=MAX_REQUESTS)] | None = None
    concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)] | None = None
    category: ShortText | None = None
    # A streamed request: when each content chunk arrived, in ms after it was sent (the first is
    # its ttft_ms); null for a whole response. Its time per output token (runner.stats).
    chunk_arrival_ms: Annotated[list[Amount], Field(max_length=MAX_TOKENS_STREAMED)] | None = None
    tpot_ms: Amount | None = None
    # The quality protocol's score of the request's output (runner.protocols.quality); null elsewhere.
    quality: QualityScore | None = None

    @model_validator(mode="after")
    def _accepted_were_drafted(self) -> RequestRecord:
        if self.draft_n_accepted > self.draft_n:
            raise ValueError(
                f"draft_n_accepted {self.draft_n_accepted} is above draft_n {self.draft_n}"
            )
        return self

    @model_validator(mode="after")
    def _figures_agree_with_its_own_counts(self) -> RequestRecord:
        if problem := self.problem():
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _divergences_follow_the_first(self) -> RequestRecord:
        if self.divergences is None:
            return self
        first = self.divergences[0] if self.divergences else None
        claimed = (self.first_divergence, self.divergence, self.divergence_margin)
        if claimed != ((first.position, first.kind, first.margin) if first else (None,) * 3):
            raise ValueError(
                "divergences do not start with first_divergence, divergence and divergence_margin"
            )
        positions = [found.position for found in self.divergences]
        if positions != sorted(set(positions)):
            raise ValueError("divergences are not in increasing positions")
        # The judging goes on only after a near tie (runner.fidelity.judge_divergences).
        if any(found.kind != NEAR_TIE for found in self.divergences[:-1]):
            raise ValueError("a divergence after a mismatch or an unclassified one was judged")
        return self

    def problem(self) -> str | None:
        """The first figure of the request that its own other figures contradict (its timings,
        counts and clocks), named by field; None if none does."""
        return (
            self._rate_problem("decode_tokens_per_second", self.decode_tokens_per_second)
            or self._rate_problem("server_predicted_per_second", self.server_predicted_per_second)
            or self._end_to_end_problem()
            or self._clock_problem()
            or self._positions_problem()
            or self._tau_problem()
            or self._tokens_problem()
            or self._chunks_problem()
            or self._tpot_problem()
        )

    def _rate_problem(self, name: str, claimed: float | None) -> str | None:
        """Whether a claimed rate is what predicted_n over predicted_ms give, in the project's
        convention (``runner.stats.decode_rate``) or the runner's earlier one
        (``first_token_included_rate``: files written before the convention changed)."""
        n, ms = self.predicted_n, self.predicted_ms
        rates = (stats.decode_rate(n, ms), stats.first_token_included_rate(n, ms))
        if claimed is None:
            # The server's own figure may be absent; the runner's is null only with nothing timed.
            agree = name == "server_predicted_per_second" or None in rates
        else:
            agree = any(rate is not None and close(claimed, rate) for rate in rates)
        if agree:
            return None
        return (
            f"{name} is {shown(claimed)}, but its predicted_n {n} over predicted_ms {shown(ms)} "
            f"give {shown(rates[0])} ((n - 1) / time; {shown(rates[1])} with the first token)"
        )

    def _end_to_end_problem(self) -> str | None:
        wall = self.wall_ms
        derived = self.predicted_n / (wall / 1000.0) if wall else None
        claimed = self.end_to_end_tokens_per_second
        if claimed is None and derived is None:
            return None
        if claimed is not None and derived is not None and close(claimed, derived):
            return None
        return (
            f"end_to_end_tokens_per_second is {shown(claimed)}, but its predicted_n "
            f"{self.predicted_n} over wall_ms {shown(wall)} give {shown(derived)}"
        )

    def _clock_problem(self) -> str | None:
        """The server's timings lie within the client's wall time, and the first token came
        within it and after the prompt."""
        wall, ttft, prompt = self.wall_ms, self.ttft_ms, self.prompt_ms
        timed = prompt + self.predicted_ms
        if wall + clock_slack(timed) < timed:
            return (
                f"wall_ms is {shown(wall)}, but the server timed prompt_ms {shown(prompt)}"
                f" and predicted_ms {shown(self.predicted_ms)} within it ({shown(timed)} ms)"
            )
        if ttft is not None and ttft > wall + clock_slack(wall):
            return f"ttft_ms is {shown(ttft)}, longer than the request's wall_ms {shown(wall)}"
        if ttft is not None and ttft + clock_slack(ttft) < prompt:
            return (
                f"ttft_ms is {shown(ttft)}, but the first token came after prompt_ms "
                f"{shown(prompt)} of prompt processing"
            )
        return None

    def _positions_problem(self) -> str | None:
        """A draft position is accepted only after the one before it: the per-position counts
        never rise, the first is at most the verify steps, and (one request at a time) they sum
        to the request's own accepted count."""
        positions = self.accepted_per_position
        if not positions:
            return None
        for index in range(1, len(positions)):
            if positions[index] > positions[index - 1]:
                return (
                    f"accepted_per_position rises from {positions[index - 1]} at position "
                    f"{index - 1} to {positions[index]} at {index}: a draft position is accepted "
                    "only after the one before it"
                )
        if self.concurrency is not None:
            return None  # A wave's shared counters are checked over the wave (Section).
        if positions[0] > self.verify_steps:
            return (
                f"accepted_per_position gives {positions[0]} accepted at position 0, but there "
                f"are only {self.verify_steps} verify steps"
            )
        if sum(positions) != self.draft_n_accepted:
            return (
                f"accepted_per_position sums to {sum(positions)}, but draft_n_accepted is "
                f"{self.draft_n_accepted}"
            )
        return None

    def _tau_problem(self) -> str | None:
        """Whether tau is 1 + accepted drafts per verify step of the record's own counts."""
        claimed, steps = self.tau, self.verify_steps
        positions = self.accepted_per_position
        accepted = sum(positions) if positions else self.draft_n_accepted
        derived = 1.0 + accepted / steps if steps else None
        if claimed is None:
            # Under concurrency a request's verify steps are a share of its wave's: no own tau.
            if derived is None or self.concurrency is not None:
                return None
        elif derived is not None and close(claimed, derived):
            return None
        return (
            f"tau is {shown(claimed)}, but its {accepted} accepted drafts over {steps} verify "
            f"steps give {shown(derived)}"
        )

    def _tokens_problem(self) -> str | None:
        """Every verify step yields the target's own token beside the drafts it accepted, after
        the first token (the prompt's): 1 + verify steps + accepted drafts is at most
        predicted_n."""
        if self.concurrency is not None or not self.predicted_n:
            return None
        steps, accepted = self.verify_steps, self.draft_n_accepted
        if 1 + steps + accepted <= self.predicted_n:
            return None
        return (
            f"draft_n_accepted {accepted} and verify_steps {steps} make {1 + steps + accepted} "
            f"tokens with the first, but predicted_n is {self.predicted_n}"
        )

    def _chunks_problem(self) -> str | None:
        """Whether a streamed request's chunk arrivals fit its own clocks and tokens: in order,
        within its wall time, no more chunks than tokens, the first its time to first token."""
        arrivals, wall = self.chunk_arrival_ms, self.wall_ms
        if not arrivals:
            return None
        if any(later < earlier for earlier, later in zip(arrivals, arrivals[1:], strict=False)):
            return "chunk_arrival_ms must not decrease: chunks arrive in order"
        if arrivals[-1] > wall + clock_slack(wall):
            return (
                f"chunk_arrival_ms ends at {shown(arrivals[-1])}, after the request's wall_ms "
                f"{shown(wall)}"
            )
        if len(arrivals) > self.predicted_n:
            return (
                f"chunk_arrival_ms has {len(arrivals)} chunks, but a chunk carries at least one "
                f"token and predicted_n is {self.predicted_n}"
            )
        if self.ttft_ms is None or not close(self.ttft_ms, arrivals[0]):
            return (
                f"ttft_ms is {shown(self.ttft_ms)}, but the first chunk arrived at "
                f"{shown(arrivals[0])}"
            )
        return None

    def _tpot_problem(self) -> str | None:
        """Whether the time per output token is what the request's clocks give
        (``runner.stats.tpot_ms``); records written before it was claimed claim none."""
        claimed = self.tpot_ms
        if claimed is None:
            return None
        derived = stats.tpot_ms(self.wall_ms, self.ttft_ms, self.predicted_n)
        if derived is not None and close(claimed, derived):
            return None
        return (
            f"tpot_ms is {shown(claimed)}, but its wall_ms {shown(self.wall_ms)}, ttft_ms "
            f"{shown(self.ttft_ms)} and predicted_n {self.predicted_n} give "
            f"{shown(derived)} ((wall - TTFT) / (n - 1))"
        )

    def in_current_convention(self) -> bool:
        """Whether its decode tok/s is ``runner.stats.decode_rate`` of its timings."""
        return stats.in_decode_convention(
            self.decode_tokens_per_second, self.predicted_n, self.predicted_ms
        )
