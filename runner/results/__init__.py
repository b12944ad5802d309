"""The runner's result as pydantic models: the one description of a benchmark result.

``BenchmarkResult`` is what ``run_benchmark`` returns and ``python -m runner run --out`` writes;
the service reads worker results, result files and uploads through ``load_result``. The models
are strict: unknown fields are refused, numbers are finite, counts non-negative and bounded,
strings bounded and free of NUL characters, and what can be derived is checked against its
evidence (a config's key, whether it is synthetic, which config the baseline must be, every
request's rates, clocks and counts against each other, every section's records against its
config, the engine and the protocol's plan, and every section's summary, points and speedups
against its own measured requests: ``RequestRecord.problem``, ``Section.records_problem`` and
``BenchmarkResult.evidence_problem``, with ``runner.evidence``'s derived figures). A result
written before the decode convention loads with its decode figures derived again under it
(``load_result``).

The shape is RESULT_SCHEMA_VERSION 1, the plain JSON data results were before these models:
``model_dump(mode="json")`` gives the same keys, nesting and field order. Fields added over time
are optional with None defaults, so an older file still validates (dumped as null, or left out
with ``exclude_unset=True``). The baseline section has no pairing fields (speedup, lossless, ...)
and no run-wide provenance (engine, system, times): the result's are subclasses of a section's.

The models by what they describe:

- `fields`: the field types they are built of (bounds, finite figures, NUL-free text) and the
  strict base model.
- `figures`: statistics, latency percentiles and goodput, accuracy and its paired difference,
  the roofline and each GPU's share, as ``runner.stats`` and ``runner.roofline`` derive them.
- `requests`: each request, checked against its own timings, clocks and counts.
- `measurements`: each point of the protocol and a section's summary.
- `provenance`: the models, engine, host, token budget, command and a paired run's rounds.
- `sections`: a section, its records checked against its config and the engine.
- `result`: the whole ``BenchmarkResult``, every figure checked against its own requests.
- `loading`: ``load_result`` and its validation errors in one line or by field.

Callers import every public name from `runner.results`, which re-exports them all.
"""

from runner.results.fields import (
    MAX_BYTES,
    MAX_FIGURE,
    MAX_LATENCY_SAMPLES,
    MAX_LOG_CHARS,
    MAX_POINTS,
    MAX_REQUESTS,
    MAX_TOKENS,
    MAX_TOKENS_STREAMED,
    MAX_TOTAL_TOKENS,
    Amount,
    ByteCount,
    ConfigKey,
    Count,
    FiniteFloat,
    GpuIndex,
    LongText,
    Sha256,
    Share,
    ShortText,
    Text,
    Timestamp,
    TokenCount,
    TokenTotal,
)
from runner.results.figures import (
    STATISTIC_FIGURES,
    Goodput,
    GpuFigures,
    Latency,
    Percentiles,
    QualityDifference,
    QualityFigures,
    Roofline,
    Statistics,
)
from runner.results.loading import (
    SHOWN_ERRORS,
    load_result,
    result_error_message,
    result_field_errors,
)
from runner.results.measurements import (
    GPU_ENERGY_TOLERANCE,
    LEGACY_SUMMARY_FIELDS,
    Point,
    ResultSummary,
    Summary,
)
from runner.results.provenance import (
    EngineInfo,
    GpuDevice,
    ModelFileInfo,
    ModelPair,
    PairedRound,
    Provenance,
    ResultProvenance,
    SystemInfo,
    TokenBudget,
)
from runner.results.requests import QualityScore, RequestRecord
from runner.results.result import BenchmarkResult
from runner.results.sections import RESULT_SCHEMA_VERSION, Section

__all__ = [
    "RESULT_SCHEMA_VERSION",
    "MAX_TOKENS",
    "MAX_TOTAL_TOKENS",
    "MAX_BYTES",
    "MAX_FIGURE",
    "MAX_REQUESTS",
    "MAX_POINTS",
    "MAX_LOG_CHARS",
    "MAX_TOKENS_STREAMED",
    "MAX_LATENCY_SAMPLES",
    "SHOWN_ERRORS",
    "STATISTIC_FIGURES",
    "ShortText",
    "Text",
    "LongText",
    "Timestamp",
    "Sha256",
    "ConfigKey",
    "FiniteFloat",
    "Amount",
    "Share",
    "TokenCount",
    "TokenTotal",
    "ByteCount",
    "Count",
    "Statistics",
    "Percentiles",
    "Goodput",
    "Latency",
    "QualityScore",
    "QualityFigures",
    "QualityDifference",
    "RequestRecord",
    "Point",
    "Roofline",
    "GpuIndex",
    "GPU_ENERGY_TOLERANCE",
    "GpuFigures",
    "LEGACY_SUMMARY_FIELDS",
    "Summary",
    "ResultSummary",
    "ModelFileInfo",
    "ModelPair",
    "EngineInfo",
    "GpuDevice",
    "SystemInfo",
    "TokenBudget",
    "Provenance",
    "PairedRound",
    "ResultProvenance",
    "Section",
    "BenchmarkResult",
    "result_error_message",
    "result_field_errors",
    "load_result",
]
