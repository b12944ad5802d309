"""A measured config's section: its config, summary, points, requests and provenance, each
checked against the others, and its records against the config and the engine (``Section``).
The whole result, which holds the measured config's section and its baseline's, is
``runner.results.result.BenchmarkResult``."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
)

from runner import protocols
from runner.config import ENGINE_DEFAULT_N_MAX, MAX_N_MAX, NGRAM_TYPES, BenchmarkConfig
from runner.protocols import stored_canonical
from runner.results.fields import MAX_POINTS, MAX_REQUESTS, ConfigKey, _Strict
from runner.results.measurements import Point, Summary
from runner.results.provenance import Provenance
from runner.results.requests import RequestRecord

RESULT_SCHEMA_VERSION: Literal[1] = 1

# No GPU draws more than this: an H200's board limit is 700 W. Results record no power limit
# (runner.provenance reads none), so a generous physical bound stands in for one.
MAX_WATTS_PER_GPU = 2000.0
# A host whose GPU count is unknown is held to the largest usual host.
UNKNOWN_GPU_COUNT = 8
# NVML updates its energy counter every few tens of milliseconds (runner.energy).
ENERGY_SLACK_SECONDS = 0.1
# The plan's request count does not depend on the vocabulary its token prompts are drawn from.
PLAN_VOCAB_SIZE = 256


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
        if isinstance(value, BenchmarkConfig):
            # A live config is held as its file records it (its canonical dict, defaults filled
            # in): a result assembled in memory equals the same result loaded from its file.
            value = value.canonical()
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

    def request_groups(self) -> list[tuple[str, list[RequestRecord]]]:
        """The records as what ran at once: each concurrency wave (phase, point, round)
        together, every other request alone; each group named for an error."""
        groups: dict[tuple[Any, ...], list[int]] = {}
        for position, record in enumerate(self.requests):
            if record.concurrency is None:
                groups[("request", position)] = [position]
            else:
                groups.setdefault(("wave", record.phase, record.point, record.round), [])
                groups[("wave", record.phase, record.point, record.round)].append(position)
        return [
            (_group_name(key, positions), [self.requests[p] for p in positions])
            for key, positions in groups.items()
        ]

    def records_problem(self, *, watts: float) -> str | None:
        """The first record that the config or the engine rules out: drafts without
        speculation, more accepted per verify step than the draft length, energy beyond the
        GPUs' ``watts``, or a request count the protocol does not plan."""
        config = self.config
        if not config.is_speculative:
            for position, record in enumerate(self.requests):
                counts = (record.draft_n, record.verify_steps, sum(record.accepted_per_position))
                if any(counts):
                    return (
                        f"requests.{position}: draft_n {counts[0]} and verify_steps {counts[1]}, "
                        "but the config does not speculate"
                    )
        bound = draft_length_bound(config) if config.is_speculative else None
        for name, records in self.request_groups():
            if found := _group_problem(name, records, bound=bound, watts=watts):
                return found
        return self._planned_problem()

    def _planned_problem(self) -> str | None:
        """Whether the section measured no request its protocol does not plan: none at a point
        the plan has not, at most the planned count at each point, and at least one at each.

        Fewer than planned is let through: the tests' fake results measure fewer requests than
        their configs' protocols plan (the runner itself always measures the whole plan; the
        door, ``runner.door``, holds a result to it)."""
        plan = protocols.plan_requests(self.config, vocab_size=PLAN_VOCAB_SIZE)
        planned = Counter(spec.point for spec in plan if spec.phase == "measure")
        measured = Counter(record.point for record in self.requests if record.phase == "measure")
        for point in sorted(set(planned) | set(measured)):
            count, plans = measured[point], planned[point]
            if count > plans or (plans and not count):
                return (
                    f"requests: {count} measured requests at point {point}, but the protocol "
                    f"plans {plans}"
                )
        return None


def draft_length_bound(config: BenchmarkConfig) -> int:
    """The most drafts one verify step can check: n_max (the engine's default where the config
    sets none) for a draft model's types; n-gram types draft by their own n-gram sizes, which
    ``--spec-draft-n-max`` does not bound, so they are held to the result model's limit."""
    if any(name in NGRAM_TYPES for name in config.spec_types):
        return MAX_N_MAX
    return config.n_max if config.n_max is not None else ENGINE_DEFAULT_N_MAX


def power_bound_watts(gpu_count: int | None) -> float:
    """The most power the host's GPUs can draw together (``MAX_WATTS_PER_GPU`` each)."""
    return MAX_WATTS_PER_GPU * (gpu_count or UNKNOWN_GPU_COUNT)


def _group_name(key: tuple[Any, ...], positions: list[int]) -> str:
    if key[0] == "request":
        return f"requests.{positions[0]}"
    shown = ", ".join(str(p) for p in positions[:4]) + (", ..." if len(positions) > 4 else "")
    return f"requests {shown} (a {key[1]} wave of point {key[2]})"


def _group_problem(
    name: str, records: list[RequestRecord], *, bound: int | None, watts: float
) -> str | None:
    """What one request, or one wave's requests together, could not have done."""
    return (
        _draft_length_problem(name, records, bound)
        or (_wave_problem(name, records) if len(records) > 1 else None)
        or _power_problem(name, records, watts)
    )


def _draft_length_problem(name: str, records: list[RequestRecord], bound: int | None) -> str | None:
    """Accepting more than the draft length per verify step, or at more positions."""
    if bound is None:
        return None
    steps = sum(r.verify_steps for r in records)
    accepted = sum(r.draft_n_accepted for r in records)
    positions = max((len(r.accepted_per_position) for r in records), default=0)
    if steps and accepted > bound * steps:
        return (
            f"{name}: {accepted} accepted drafts over {steps} verify steps are "
            f"{1 + accepted / steps:.4g} tokens a step, above n_max + 1 = {bound + 1}"
        )
    if positions > bound:
        return f"{name}: accepted_per_position counts {positions} positions, above n_max = {bound}"
    return None


def _wave_problem(name: str, records: list[RequestRecord]) -> str | None:
    """A wave's shared counters against its requests' counts together."""
    steps = sum(r.verify_steps for r in records)
    accepted = sum(r.draft_n_accepted for r in records)
    return _wave_positions_problem(name, records, steps, accepted) or _wave_tokens_problem(
        name, records, steps, accepted
    )


def _wave_positions_problem(
    name: str, records: list[RequestRecord], steps: int, accepted: int
) -> str | None:
    """The wave's per-position counts sum to its accepted drafts, the first at most its steps."""
    counts = [r.accepted_per_position for r in records if r.accepted_per_position]
    if not counts:
        return None
    counted = sum(sum(positions) for positions in counts)
    if counted != accepted:
        return (
            f"{name}: accepted_per_position sums to {counted} over the wave, but its "
            f"draft_n_accepted sum to {accepted}"
        )
    first = sum(positions[0] for positions in counts)
    if first > steps:
        return f"{name}: {first} accepted at position 0, but the wave ran {steps} verify steps"
    return None


def _wave_tokens_problem(
    name: str, records: list[RequestRecord], steps: int, accepted: int
) -> str | None:
    """Each request's first token, every verify step's own and the accepted drafts are at most
    the tokens the wave generated."""
    tokens = sum(r.predicted_n for r in records)
    if tokens and len(records) + steps + accepted > tokens:
        return (
            f"{name}: {accepted} accepted drafts and {steps} verify steps make "
            f"{len(records) + steps + accepted} tokens with each request's first, but the "
            f"wave generated {tokens}"
        )
    return None


def _power_problem(name: str, records: list[RequestRecord], watts: float) -> str | None:
    """Drawing more energy than the GPUs' power allows over the requests' time."""
    energies = [r.energy_joules for r in records if r.energy_joules is not None]
    seconds = max(r.wall_ms for r in records) / 1000.0
    allowed = watts * (seconds + ENERGY_SLACK_SECONDS)
    if energies and sum(energies) > allowed:
        return (
            f"{name}: energy_joules {sum(energies):.6g} J in {seconds:.6g} s is above the "
            f"GPUs' {watts:g} W ({allowed:.6g} J)"
        )
    return None
