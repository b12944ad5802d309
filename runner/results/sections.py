"""A result as a whole: a measured config's section (its config, summary, points, requests and
provenance, each checked against the others) and the ``BenchmarkResult`` that holds the
measured config's section, the engine and its paired baseline's section, every figure checked
against its own requests by ``runner.evidence``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from runner.config import BenchmarkConfig
from runner.evidence import evidence_problem
from runner.protocols import stored_canonical
from runner.results.fields import MAX_POINTS, MAX_REQUESTS, ConfigKey, _Strict
from runner.results.measurements import Point, ResultSummary, Summary
from runner.results.provenance import EngineInfo, Provenance, ResultProvenance
from runner.results.requests import RequestRecord

RESULT_SCHEMA_VERSION: Literal[1] = 1


class Section(_Strict):
    """One measured config: the config, its summary, per-depth points and per-request records.

    ``config`` is the runner's own ``BenchmarkConfig``, dumped as its canonical dict;
    ``config_key`` and ``synthetic`` must be what that config says they are.
    """

    config: BenchmarkConfig
    config_key: ConfigKey
    synthetic: bool
    summary: Summary
    points: Annotated[list[Point], Field(max_length=MAX_POINTS)]
    requests: Annotated[list[RequestRecord], Field(max_length=MAX_REQUESTS)]
    provenance: Provenance

    @field_validator("config", mode="before")
    @classmethod
    def _config_from_canonical(cls, value: Any) -> Any:
        if isinstance(value, dict):
            try:
                return BenchmarkConfig.from_canonical(stored_canonical(value))
            except ValidationError:
                pass  # The field's own validation names every error, with its path.
        return value

    @field_serializer("config")
    def _canonical_config(self, config: BenchmarkConfig) -> dict[str, Any]:
        return config.canonical()

    @field_validator("config_key")
    @classmethod
    def _key_of_the_config(cls, key: str, info: ValidationInfo) -> str:
        config = info.data.get("config")
        if isinstance(config, BenchmarkConfig) and config.key != key:
            raise ValueError(f"does not match the config, whose key is {config.key}")
        return key

    @field_validator("synthetic")
    @classmethod
    def _synthetic_as_the_config_says(cls, synthetic: bool, info: ValidationInfo) -> bool:
        config = info.data.get("config")
        if isinstance(config, BenchmarkConfig) and config.is_synthetic != synthetic:
            raise ValueError(f"is {synthetic}, but the config says {config.is_synthetic}")
        return synthetic


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
        # The config, engine and provenance too: the roofline is derived from them.
        sections = {"config", "summary", "points", "requests", "baseline", "engine", "provenance"}
        if problem := evidence_problem(self.model_dump(include=sections)):
            raise ValueError(problem)
        return self
