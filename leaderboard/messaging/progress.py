"""A GPU host's progress event as the site keeps it: the one description of what a job's
`progress` may hold.

A host we do not own may send anything in a progress event (`{"done": null, "total": "many"}`,
NaN, 10**400, a phase of a megabyte), and the job page, the jobs API, the queue estimate and
/hosts/ all read what is stored. `clean_progress` keeps only well-typed figures within the
runner's own bounds (runner.results) and drops the rest field by field, so one bad figure does
not cost a job its phase; the readers call it too, so rows stored before it existed still show.

The events it must pass are the runner's (`runner.benchmark._Progress.report`: phase, done,
total, tokens, elapsed_s and the engine's log tail), the model download's
(`runner.model_cache.download_progress`: phase "downloading", downloaded_bytes, total_bytes) and
the site's own ("started", "requeued", "done").
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
)

from runner.results import MAX_REQUESTS, Amount, ByteCount, TokenTotal

# The engine's recent log shown live on the job page: its last characters only.
LIVE_LOG_CHARS = 4000
# The phases the runner, the model cache and the site send today are "started", "downloading",
# "loading", "warmup", "measuring", "baseline", "baseline margins", "requeued" and "done"; any
# other short lowercase name is kept too, so that a newer runner's phase still shows (the
# pattern bars NULs, markup and megabytes).
Phase = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9 _-]{0,39}$")]
# A job's requests, its paired baseline's included.
RequestCount = Annotated[int, Field(ge=0, le=2 * MAX_REQUESTS)]


class ProgressEvent(BaseModel):
    """One progress event's figures, each None where it was missing or not well typed."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    phase: Phase | None = None
    done: RequestCount | None = None
    total: RequestCount | None = None
    tokens: TokenTotal | None = None
    elapsed_s: Amount | None = None
    downloaded_bytes: ByteCount | None = None
    total_bytes: ByteCount | None = None

    @field_validator("*", mode="wrap")
    @classmethod
    def _drop_what_is_not_well_typed(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return None


def clean_progress(progress: object) -> dict:
    """The well-typed figures of a progress event (or of a stored one), the rest left out."""
    if not isinstance(progress, dict):
        return {}
    return ProgressEvent.model_validate(progress).model_dump(exclude_none=True)


def live_log(progress: object) -> str | None:
    """The engine's recent log a progress event carries (NULs removed, its last
    LIVE_LOG_CHARS characters), or None when it carries no text."""
    text = progress.get("log_tail") if isinstance(progress, dict) else None
    if not isinstance(text, str):
        return None
    return storable_text(text)[-LIVE_LOG_CHARS:]


def storable_text(value: object) -> str:
    """A host's text as storable text: a string without NUL characters (which PostgreSQL's text
    columns refuse), whatever type the message carried."""
    return (value if isinstance(value, str) else "" if value is None else str(value)).replace(
        "\x00", ""
    )
