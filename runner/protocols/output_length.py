"""The output-length protocol: output length varies, input length is fixed, how a speedup
moves with the tokens asked; and its own figures, what each length generated and its speedup's
interval.

A point is one output length. Beside the figures every point has (``runner.stats.depth_points``),
an output length's point carries

- ``generated_tokens``: the summary of its measured requests' ``predicted_n``. The requests force
  their length (``ignore_eos``), so it is the length asked for; a record that says otherwise
  shows here and, through ``stopped_early``, marks the section degenerate.
- ``speedup_ci95_low`` / ``speedup_ci95_high`` (the measured config's points, paired only): a 95%
  interval of the point's speedup, the delta method on the log of the ratio of the two sides'
  mean decode tok/s, with Welch's degrees of freedom (``speedup_interval``: the verdict layer's
  ``ratio_interval``, with ``runner.stats.t_critical_95`` for the t quantile). None where a side
  has fewer than two measured requests.

``output_length_problem`` re-derives all three from a result's own points and requests (the
points' decode statistics are themselves checked against the requests by ``runner.evidence``),
so a claimed per-length figure that the requests contradict is refused at the door; for other
protocols the three must be null.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from runner.protocols.base import (
    MAX_CONTEXT,
    MAX_REQUEST_TOKENS,
    ProtocolBase,
    RequestSpec,
    SweepPoint,
    Tokens,
    points_costs,
    points_plan,
    span,
    stored_sizes,
    wholes,
)

if TYPE_CHECKING:
    from runner.config import BenchmarkConfig

PROTOCOL_NAME = "output-length"
# Output lengths the protocol measures at most in one run.
MAX_OUTPUT_LENGTHS = 8


def _seed_output_lengths() -> list[int]:
    return [64, 256, 1024, 2048]


class OutputLengthProtocol(ProtocolBase):
    """Output length varies, input length is fixed: how a speedup moves with the tokens asked.

    Per length, ``warmup`` then ``requests`` requests of exact token-id prompts (as the depth
    protocol's), each forced to its length (``ignore_eos``, ``RequestSpec``), so every request
    generates exactly the tokens asked; the records' ``predicted_n`` say so and each point's
    ``generated_tokens`` is derived from them (``with_point_figures``).
    """

    name: Literal["output-length"] = "output-length"
    input_tokens: int = Field(strict=True, default=512, ge=1, le=MAX_REQUEST_TOKENS)
    # After the input length, so that the lengths' check can see the context they need.
    output_lengths: list[Annotated[int, Field(strict=True)]] = Field(
        default_factory=_seed_output_lengths, max_length=MAX_OUTPUT_LENGTHS
    )
    requests: int = Field(strict=True, default=5, ge=1, le=200)
    warmup: int = Field(strict=True, default=1, ge=0, le=20)
    seed: int = Field(strict=True, default=42, ge=0, le=2**31 - 1)

    @field_validator("output_lengths")
    @classmethod
    def _lengths_the_context_holds(cls, lengths: list[int], info: ValidationInfo) -> list[int]:
        if not lengths:
            raise ValueError("give at least one output length")
        for length in lengths:
            if not 1 <= length <= MAX_REQUEST_TOKENS:
                raise ValueError(
                    f"output length {length} must lie between 1 and {MAX_REQUEST_TOKENS}"
                )
        if any(later <= earlier for earlier, later in zip(lengths, lengths[1:], strict=False)):
            raise ValueError("output lengths must be strictly increasing, without duplicates")
        if "input_tokens" in info.data:
            needed = info.data["input_tokens"] + max(lengths) + 16
            if needed > MAX_CONTEXT:
                raise ValueError(
                    f"{info.data['input_tokens']} tokens in and {max(lengths)} out need "
                    f"{needed} tokens of context, above {MAX_CONTEXT}"
                )
        return lengths

    def required_context(self) -> int:
        return self.input_tokens + max(self.output_lengths) + 16

    @property
    def points(self) -> list[SweepPoint]:
        return [
            SweepPoint(
                input_tokens=self.input_tokens,
                output_tokens=length,
                requests=self.requests,
                warmup=self.warmup,
            )
            for length in self.output_lengths
        ]

    def plan(self, config: BenchmarkConfig, *, vocab_size: int) -> list[RequestSpec]:
        return points_plan(self.points, seed=self.seed, config=config, vocab_size=vocab_size)

    def measured_waves_per_point(self) -> int:
        return self.requests

    def token_costs(self) -> tuple[Tokens, Tokens]:
        return points_costs(self.points)

    def with_point_figures(
        self, points: list[dict[str, Any]], records: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        """The points with each length's ``generated_tokens``."""
        return [
            point
            | {"generated_tokens": generated_tokens([r for r in records if r["point"] == index])}
            for index, point in enumerate(points)
        ]

    def with_paired_figures(
        self, points: list[dict[str, Any]], baseline_points: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        """The points with each length's speedup interval against the baseline's same point."""
        found = []
        for point, reference in zip(points, baseline_points, strict=True):
            interval = speedup_interval(point, reference)
            low, high = interval if interval is not None else (None, None)
            found.append(point | {"speedup_ci95_low": low, "speedup_ci95_high": high})
        return found

    @classmethod
    def check_evidence(cls, result: Mapping[str, Any]) -> str | None:
        return output_length_problem(result)

    @classmethod
    def stored_output_lengths(cls, stored: Mapping[str, Any]) -> list[int]:
        return wholes(stored.get("output_lengths"))

    @classmethod
    def workload_label(cls, stored: Mapping[str, Any], *, prompt_set: str = "") -> str:
        """'output length 64–2048 tokens (4 lengths), 512 in'."""
        lengths = cls.stored_output_lengths(stored)
        parts = [
            f"output length {span(lengths)} tokens ({len(lengths)} lengths)"
            if lengths
            else PROTOCOL_NAME
        ]
        return ", ".join(parts + stored_sizes(stored, ("input_tokens", "in")))


# --- Its figures ------------------------------------------------------------------------------

INTERVAL_FIELDS = ("speedup_ci95_low", "speedup_ci95_high")
# Float noise between two computations of one figure (runner.evidence's tolerances).
_RELATIVE = 1e-6
_ABSOLUTE = 1e-9


def t_quantile(degrees_of_freedom: float) -> float:
    """The two-sided 95% t value at fractional degrees of freedom: linear in 1/df between the
    whole numbers either side (``runner.stats.t_critical_95``'s own rule between its table's)."""
    from runner import stats  # inside: runner.stats reads the protocol classes

    lower = max(1, math.floor(degrees_of_freedom))
    if degrees_of_freedom <= lower:
        return stats.t_critical_95(lower)
    upper = lower + 1
    weight = (1.0 / lower - 1.0 / degrees_of_freedom) / (1.0 / lower - 1.0 / upper)
    low_t, high_t = stats.t_critical_95(lower), stats.t_critical_95(upper)
    return low_t + weight * (high_t - low_t)


def _decode(point: Mapping[str, Any]) -> tuple[int, float, float] | None:
    """A point's decode tok/s as (n, mean, stdev), where it has a spread and a positive mean."""
    figures = point.get("decode_tokens_per_second")
    if not isinstance(figures, Mapping):
        return None
    n, mean, stdev = figures.get("n"), figures.get("mean"), figures.get("stdev")
    if not isinstance(n, int) or n < 2 or mean is None or stdev is None or mean <= 0:
        return None
    return n, float(mean), float(stdev)


def speedup_interval(
    point: Mapping[str, Any], reference: Mapping[str, Any]
) -> tuple[float, float] | None:
    """A 95% interval of a point's mean decode tok/s over the baseline's at the same length: the
    delta method on the log of the ratio, Welch's degrees of freedom; None without two measured
    requests on each side."""
    own, base = _decode(point), _decode(reference)
    if own is None or base is None:
        return None
    ratio = own[1] / base[1]
    own_var = (own[2] / own[1]) ** 2 / own[0]
    base_var = (base[2] / base[1]) ** 2 / base[0]
    if own_var + base_var == 0:
        return ratio, ratio
    df = (own_var + base_var) ** 2 / (own_var**2 / (own[0] - 1) + base_var**2 / (base[0] - 1))
    half = t_quantile(max(1.0, df)) * math.sqrt(own_var + base_var)
    return ratio * math.exp(-half), ratio * math.exp(half)


def generated_tokens(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The tokens some measured requests generated: the summary of their ``predicted_n``."""
    from runner import stats  # inside: runner.stats reads the protocol classes

    return stats.summarize([record["predicted_n"] for record in records])


# --- The check at the door ------------------------------------------------------------------


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    return f"{value:.10g}" if isinstance(value, float) else str(value)


def _differs(claimed: Any, derived: Any) -> bool:
    if claimed is None or derived is None or isinstance(derived, int):
        return bool(claimed != derived)
    if not isinstance(claimed, int | float) or isinstance(claimed, bool):
        return True
    return not math.isclose(claimed, derived, rel_tol=_RELATIVE, abs_tol=_ABSOLUTE)


def _statistics_problem(path: str, claimed: Any, derived: dict[str, Any]) -> str | None:
    if claimed is None:
        return f"{path} is null, but the measured requests give n = {derived['n']}"
    if not isinstance(claimed, Mapping):
        return f"{path} is not a statistics object"
    for name, value in derived.items():
        if _differs(claimed.get(name), value):
            return (
                f"{path}.{name} is {_shown(claimed.get(name))}, but the point's measured "
                f"requests give {_shown(value)}"
            )
    return None


def _protocol(section: Mapping[str, Any]) -> Mapping[str, Any]:
    config = section.get("config")
    protocol = config.get("protocol") if isinstance(config, Mapping) else None
    return protocol if isinstance(protocol, Mapping) else {}


def _point_problem(
    path: str, index: int, point: Mapping[str, Any], protocol: Mapping[str, Any], mine: list[Any]
) -> str | None:
    """One length's point against the protocol's point and its own measured requests."""
    length = protocol["output_lengths"][index]
    shape = (point.get("input_tokens"), point.get("output_tokens"))
    if shape != (protocol.get("input_tokens"), length):
        return (
            f"{path}: {shape[0]} in, {shape[1]} out, but the protocol's point {index} is "
            f"{protocol.get('input_tokens')} in, {length} out"
        )
    asked = {r.get("output_tokens_requested") for r in mine}
    if asked - {length}:
        return (
            f"{path}: its measured requests asked for {sorted(asked, key=str)} tokens, but "
            f"the point's output length is {length}"
        )
    return _statistics_problem(
        f"{path}.generated_tokens", point.get("generated_tokens"), generated_tokens(mine)
    )


def _foreign_figures_problem(points: list[Any], prefix: str) -> str | None:
    """Another protocol's points claim no output-length figures."""
    for index, point in enumerate(points):
        if point.get("generated_tokens") is not None:
            return f"{prefix}points.{index}.generated_tokens: only output-length points have it"
    return None


def _measured_by_point(section: Mapping[str, Any]) -> dict[Any, list[Any]]:
    found: dict[Any, list[Any]] = {}
    for record in section.get("requests") or []:
        if record.get("phase") == "measure":
            found.setdefault(record.get("point"), []).append(record)
    return found


def _section_problem(section: Mapping[str, Any], prefix: str) -> str | None:
    """An output-length section's points against its protocol and requests, or, for any other
    protocol, the output-length figures it must not claim."""
    protocol = _protocol(section)
    points = section.get("points") or []
    if protocol.get("name") != PROTOCOL_NAME:
        return _foreign_figures_problem(points, prefix)
    protocol = dict(protocol) | {"output_lengths": list(protocol.get("output_lengths") or [])}
    if len(points) != len(protocol["output_lengths"]):
        return (
            f"{prefix}points: {len(points)} points, but the protocol measures "
            f"{len(protocol['output_lengths'])} output lengths"
        )
    measured = _measured_by_point(section)
    problems = (
        _point_problem(f"{prefix}points.{index}", index, point, protocol, measured.get(index, []))
        for index, point in enumerate(points)
    )
    return next((problem for problem in problems if problem), None)


def _interval_problem(
    section: Mapping[str, Any], prefix: str, reference: list[Any] | None
) -> str | None:
    """A section's claimed speedup intervals against those its points and the baseline's give
    (`reference`, the baseline's points; None where the section may claim none)."""
    for index, point in enumerate(section.get("points") or []):
        derived: tuple[float, float] | tuple[None, None] = (None, None)
        if reference is not None and index < len(reference):
            derived = speedup_interval(point, reference[index]) or (None, None)
        for name, gives in zip(INTERVAL_FIELDS, derived, strict=True):
            if _differs(given := point.get(name), gives):
                return (
                    f"{prefix}points.{index}.{name} is {_shown(given)}, but its points and "
                    f"the baseline's give {_shown(gives)}"
                )
    return None


def output_length_problem(result: Mapping[str, Any]) -> str | None:
    """The first output-length figure of a result (each length's point against the protocol,
    the tokens its requests asked for and generated, and the measured config's speedup interval
    against both sections' points) that the result's own data contradict; None if none does."""
    found = result.get("baseline")
    baseline: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    problem = _section_problem(result, "") or _section_problem(baseline, "baseline: ")
    if problem is not None:
        return problem
    output_length = _protocol(result).get("name") == PROTOCOL_NAME
    reference = (baseline.get("points") or []) if baseline and output_length else None
    return _interval_problem(result, "", reference) or _interval_problem(
        baseline, "baseline: ", None
    )
