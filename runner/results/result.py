"""A whole result (``BenchmarkResult``): the measured config's section, the engine and its
paired baseline's section, every figure checked against its own requests: each section's
records against its config and the engine (``Section.records_problem``), each figure against
what ``runner.evidence`` derives from the records, and each request's divergences against the
two sides' outputs and the margin rule."""

from __future__ import annotations

from typing import Literal

from pydantic import ValidationInfo, field_validator, model_validator

from runner import evidence
from runner.agreement import shown
from runner.config import BenchmarkConfig
from runner.fidelity import MAX_CONTINUATIONS, NEAR_TIE, NEAR_TIE_MARGIN
from runner.results.measurements import ResultSummary
from runner.results.provenance import EngineInfo, ResultProvenance
from runner.results.requests import RequestRecord
from runner.results.sections import Section, power_bound_watts


class BenchmarkResult(Section):
    """A whole result: the measured config's section, the engine, and its paired baseline.

    ``model_dump(mode="json")`` is the plain dict results always were; fields an older file
    lacked dump as null, and ``exclude_unset=True`` leaves them out (see the module docstring).
    """

    summary: ResultSummary
    provenance: ResultProvenance
    schema_version: Literal[1]
    engine: EngineInfo
    baseline: Section | None = None

    @field_validator("baseline")
    @classmethod
    def _the_paired_baseline(cls, baseline: Section | None, info: ValidationInfo) -> Section | None:
        config = info.data.get("config")
        if baseline is None or not isinstance(config, BenchmarkConfig):
            return baseline
        if baseline.config.is_speculative:
            raise ValueError("the baseline config is speculative")
        expected = config.baseline().key
        if baseline.config_key != expected:
            raise ValueError(
                f"its config (key {baseline.config_key}) is not the config's paired baseline "
                f"(key {expected})"
            )
        return baseline

    @model_validator(mode="after")
    def _rounds_cover_the_requests(self) -> BenchmarkResult:
        rounds = self.provenance.paired_rounds
        if rounds is None:
            return self
        if self.baseline is None:
            raise ValueError("provenance.paired_rounds: rounds are recorded without a baseline")
        indices = sorted(index for paired in rounds for index in paired.request_indices)
        if indices != list(range(len(self.requests))):
            raise ValueError(
                "provenance.paired_rounds: the rounds' request indices must name every measured "
                f"request once (0 to {len(self.requests) - 1})"
            )
        for paired in rounds:
            levels = {self.requests[index].concurrency for index in paired.request_indices}
            if levels != {paired.concurrency}:
                raise ValueError(
                    f"provenance.paired_rounds: round {paired.round} says concurrency "
                    f"{paired.concurrency}, but its requests ran at {sorted(levels, key=str)}"
                )
        return self

    def written_before_the_convention(self) -> bool:
        """Whether any request's decode tok/s is not ``runner.stats.decode_rate`` of its
        timings: a result written before the convention (``runner.results.load_result``)."""
        sections = [self] + ([self.baseline] if self.baseline is not None else [])
        return not all(
            record.in_current_convention() for section in sections for record in section.requests
        )

    @model_validator(mode="after")
    def _figures_from_the_requests(self) -> BenchmarkResult:
        if problem := self.evidence_problem():
            raise ValueError(problem)
        return self

    def evidence_problem(self) -> str | None:
        """The first claim of the result that its own records contradict, prefixed "baseline: "
        for the baseline's: each section's records against its config and the engine
        (``Section.records_problem``), and every figure against what ``runner.evidence``
        derives from the records."""
        # The plain data runner.evidence's derivations read, shared with the site's stored
        # results: the config, engine and provenance too, for the roofline.
        data = self.model_dump(
            include={"config", "summary", "points", "requests", "baseline", "engine", "provenance"}
        )
        watts = power_bound_watts(self.provenance.system.gpu_count)
        problem = evidence.section_evidence_problem(data) or self.records_problem(watts=watts)
        if problem is None and self.baseline is not None:
            found = evidence.section_evidence_problem(
                data["baseline"]
            ) or self.baseline.records_problem(watts=watts)
            problem = f"baseline: {found}" if found else None
        return (
            problem
            or evidence.pair_figures_problem(data)
            or self._identity_problem()
            or self._margin_problem()
            or evidence.grade_problem(data)
        )

    def _identity_problem(self) -> str | None:
        """Whether each request's first divergence agrees with its output: the runner pairs the
        i-th request with the baseline's i-th and hashes its token ids (``output_sha256``), so a
        request without a divergence has the baseline's hash, one with a divergence another,
        and the same tokens give the same text (the quality protocol's answers). "Identical" is
        derived from the outputs, never taken from the divergence claim alone."""
        if self.baseline is None or self.synthetic:
            return None
        mine, theirs = self.requests, self.baseline.requests
        if len(mine) != len(theirs):
            claims = any(record.first_divergence is not None for record in mine)
            if claims or self.summary.fidelity is not None:
                return (
                    f"the run has {len(mine)} request records and its baseline {len(theirs)}: "
                    "their outputs cannot be paired"
                )
            return None
        pairs = enumerate(zip(mine, theirs, strict=True))
        return next((found for i, pair in pairs if (found := _output_problem(i, *pair))), None)

    def _margin_problem(self) -> str | None:
        """Whether every near tie is one by the margin rule (``runner.fidelity``): its margin is
        known and below the threshold the grade was judged with, that threshold is not above the
        runner's (``NEAR_TIE_MARGIN``), and a request has no more near ties than its judging can
        find (the first divergence and one a continuation, at most ``MAX_CONTINUATIONS``)."""
        grade = self.summary.fidelity
        threshold = grade.near_tie_margin if grade is not None else NEAR_TIE_MARGIN
        if threshold > NEAR_TIE_MARGIN:
            return (
                f"summary.fidelity.near_tie_margin is {shown(threshold)} nats, above the "
                f"runner's {shown(NEAR_TIE_MARGIN)}: a clear winner overruled is a mismatch"
            )
        return next(
            (
                found
                for index, record in enumerate(self.requests)
                if (found := _near_ties_problem(index, record, threshold))
            ),
            None,
        )


def _output_problem(index: int, record: RequestRecord, reference: RequestRecord) -> str | None:
    """Whether a request's first divergence and answer agree with its output's hash against the
    baseline's same request."""
    same = record.output_sha256 == reference.output_sha256
    first = record.first_divergence
    if same and first is not None:
        return (
            f"requests.{index}.first_divergence is {first}, but its output_sha256 is the "
            f"baseline's request {index}'s: identical outputs"
        )
    if not same and first is None:
        return (
            f"requests.{index}.first_divergence is null, but its output_sha256 differs from "
            f"the baseline's request {index}'s: the outputs are not identical"
        )
    scores = record.quality, reference.quality
    if same and scores[0] is not None and scores[1] is not None:
        if scores[0].output_text != scores[1].output_text:
            return (
                f"requests.{index}.output_sha256 is the baseline's request {index}'s, but its "
                f"output text (answer {_quoted(scores[0].extracted)}) is not the baseline's "
                f"(answer {_quoted(scores[1].extracted)})"
            )
    return None


def _quoted(answer: str) -> str:
    return repr(answer if len(answer) <= 40 else answer[:39] + "…")


def _near_ties_problem(index: int, record: RequestRecord, threshold: float) -> str | None:
    """Whether a request's near ties are near ties by the margin rule, and no more than its
    judging can find (records before the divergence list: its first divergence)."""
    found: list[tuple[int, float | None, str | None]]
    if record.divergences is not None:
        found = [(d.position, d.margin, d.kind) for d in record.divergences]
    elif record.first_divergence is not None:
        found = [(record.first_divergence, record.divergence_margin, record.divergence)]
    else:
        found = []
    near_ties = [(position, margin) for position, margin, kind in found if kind == NEAR_TIE]
    if len(near_ties) > MAX_CONTINUATIONS + 1:
        return (
            f"requests.{index} has {len(near_ties)} near ties, more than the "
            f"{MAX_CONTINUATIONS + 1} its judging can find"
        )
    for position, margin in near_ties:
        if margin is None or margin >= threshold:
            return (
                f"requests.{index}: the near tie at position {position} has a margin "
                f"of {shown(margin)} nats, not below {shown(threshold)}: not a near tie"
            )
    return None
