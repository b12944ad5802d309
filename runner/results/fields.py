"""The field types every result model is built of: bounded counts and sizes, finite figures,
shares, hashes, keys, timestamps that carry their time zone and text free of NUL characters,
and the strict base model (unknown fields refused, no coercion)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from runner.config import MAX_GPUS

MAX_TOKENS = 10**9  # one request's tokens
MAX_TOTAL_TOKENS = 10**12  # a whole run's tokens
MAX_BYTES = 2**53
MAX_FIGURE = 1e15
MAX_REQUESTS = 100_000
MAX_POINTS = 64
MAX_LOG_CHARS = 65_536
# One streamed request's content chunks, and a section's latency samples (every chunk gap).
MAX_TOKENS_STREAMED = 1_000_000
MAX_LATENCY_SAMPLES = MAX_REQUESTS * MAX_TOKENS_STREAMED


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain a NUL character")
    return value


def _aware_timestamp(value: str) -> str:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("must be an ISO 8601 date and time") from None
    if moment.tzinfo is None:
        raise ValueError("must carry its time zone")
    return value


ShortText = Annotated[str, StringConstraints(max_length=256), AfterValidator(_no_nul)]
Text = Annotated[str, StringConstraints(max_length=4096), AfterValidator(_no_nul)]
LongText = Annotated[str, StringConstraints(max_length=MAX_LOG_CHARS), AfterValidator(_no_nul)]
Timestamp = Annotated[str, StringConstraints(max_length=64), AfterValidator(_aware_timestamp)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
ConfigKey = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")]


FiniteFloat = Annotated[float, Field(allow_inf_nan=False, ge=-MAX_FIGURE, le=MAX_FIGURE)]
# Seconds, milliseconds, tokens per second, tau, speedup: finite and never negative.
Amount = Annotated[float, Field(allow_inf_nan=False, ge=0, le=MAX_FIGURE)]
Share = Annotated[float, Field(allow_inf_nan=False, ge=0, le=1)]
TokenCount = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
TokenTotal = Annotated[int, Field(ge=0, le=MAX_TOTAL_TOKENS)]
ByteCount = Annotated[int, Field(ge=0, le=MAX_BYTES)]
# Sizes read from a model's metadata: layers, widths, vocabulary, context.
Count = Annotated[int, Field(ge=0, le=MAX_TOKENS)]


GpuIndex = Annotated[int, Field(ge=0, lt=MAX_GPUS)]


def _numbered_in_order(gpus: list[Any] | None) -> None:
    if gpus is not None and [gpu.index for gpu in gpus] != list(range(len(gpus))):
        raise ValueError("gpus must be numbered 0, 1, ... in order, each once")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
