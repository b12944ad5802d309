"""A run's stored result, read through one typed, lenient view: `StoredResult`.

A recorded result is stored in two parts that never repeat each other. Each request is a
`RequestRecord` row of its run: the columns the pages query, and the rest of the runner's record
(its prompt hash, streamed chunk times, energy, round, category, quality score) in `details`.
Everything else of the file (summary, points, engine, provenance, the baseline section's summary
and points) is `Run.raw_result`. `request_row` splits a runner record for the one writer
(`services.results.record_run`); `stored_results` and `stored_requests` put the parts together
again for every reader, services, selectors and verdicts alike (it imports none of them).

A stored result may be old, damaged or of any shape at all (it was written by whichever runner
version measured it): the view takes what has the expected shape and gives a default for the
rest (an empty summary, no points, no requests), so no reader guards a key of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from leaderboard.models import REQUEST_RECORD_FIELDS, RequestRecord, Run
from runner.results import RequestRecord as RunnerRecord

type Record = dict[str, Any]


def request_row(record: RunnerRecord) -> Record:
    """A runner's request record as a `RequestRecord` row: its columns, the rest in `details`."""
    whole = record.model_dump(mode="json", exclude_unset=True)
    columns = record.model_dump(include=set(REQUEST_RECORD_FIELDS))
    return columns | {"details": {key: value for key, value in whole.items() if key not in columns}}


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: object) -> float | None:
    """A stored number as it is (an int or a float, never a bool), else None."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _points(value: object) -> tuple[dict[str, Any], ...]:
    # A point of another shape stays in its place, empty: the requests name points by position.
    return tuple(_mapping(point) for point in value) if isinstance(value, list) else ()


@dataclass(frozen=True)
class StoredSection:
    """What a stored result keeps of a section: its summary and its points."""

    summary: dict[str, Any] = field(default_factory=dict)
    points: tuple[dict[str, Any], ...] = ()
    # A section's requests: a run's records, or those an older file's nested baseline kept.
    requests: tuple[Record, ...] = ()

    @property
    def stored_points(self) -> list[dict[str, Any]] | None:
        """The points as the runner's derivations read them (None: the result has none)."""
        return list(self.points) if self.points else None

    # The summary's figures the site reads, each a number as stored or None.

    @property
    def joules_per_token(self) -> float | None:
        return _number(self.summary.get("joules_per_token"))

    @property
    def energy_joules(self) -> float | None:
        return _number(self.summary.get("energy_joules"))

    @property
    def engine_seconds(self) -> float | None:
        """Seconds llama-server was held for the section, as the runner reported them."""
        return _number(self.summary.get("engine_seconds"))

    @property
    def baseline_decode_tokens_per_second(self) -> float | None:
        """The baseline's decode mean the file's own pairing used."""
        return _number(self.summary.get("baseline_decode_tokens_per_second"))

    @property
    def gpu_peak_memory_bytes(self) -> float | None:
        """The section's peak GPU memory (None for a CPU build's process memory)."""
        if self.summary.get("memory_kind") != "gpu":
            return None
        return _number(self.summary.get("peak_memory_bytes"))

    @property
    def acceptance_by_position(self) -> list[float] | None:
        """The share of verify steps that accepted each draft position, as the summary says it
        (the door checked it against the requests); None where the summary does not say."""
        if "acceptance_by_position" not in self.summary:
            return None
        pooled = self.summary["acceptance_by_position"]
        return [float(value) for value in pooled] if isinstance(pooled, list) else []

    @property
    def fidelity(self) -> dict[str, Any] | None:
        """The grade of the greedy output against the baseline measured beside it."""
        grade = self.summary.get("fidelity")
        return grade if isinstance(grade, dict) else None

    @property
    def quality(self) -> dict[str, Any] | None:
        """The quality protocol's tasks and correct answers, as the summary counts them."""
        own = self.summary.get("quality")
        return own if isinstance(own, dict) else None

    @property
    def quality_difference(self) -> dict[str, Any] | None:
        """The paired baseline's pair counts and the difference with its interval."""
        paired = self.summary.get("quality_difference")
        return paired if isinstance(paired, dict) else None

    @property
    def quality_scores(self) -> list[tuple[object, dict[str, Any]]]:
        """Each request's scored task, in order, with the request's index: (index, score);
        the requests the quality protocol did not score are left out."""
        scored = ((record.get("index"), record.get("quality")) for record in self.requests)
        return [(index, score) for index, score in scored if isinstance(score, dict)]


def _section(stored: dict[str, Any]) -> StoredSection:
    requests = stored.get("requests")
    return StoredSection(
        summary=_mapping(stored.get("summary")),
        points=_points(stored.get("points")),
        requests=tuple(r for r in requests if isinstance(r, dict))
        if isinstance(requests, list)
        else (),
    )


@dataclass(frozen=True)
class StoredResult(StoredSection):
    """A run's stored result, each part an object of its expected shape or its default."""

    engine: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    # The baseline measured in the same invocation, as its speculative section stored it.
    baseline: StoredSection | None = None
    config_key: str = ""

    @classmethod
    def of(cls, stored: object, *, requests: Iterable[Record] = ()) -> StoredResult:
        """The view of a stored result (`Run.raw_result`) and its request records."""
        raw = _mapping(stored)
        baseline, config_key = raw.get("baseline"), raw.get("config_key")
        return cls(
            # The run's whole request records in the order they were measured, where read.
            requests=tuple(requests),
            summary=_mapping(raw.get("summary")),
            points=_points(raw.get("points")),
            engine=_mapping(raw.get("engine")),
            provenance=_mapping(raw.get("provenance")),
            baseline=_section(baseline) if isinstance(baseline, dict) and baseline else None,
            config_key=config_key if isinstance(config_key, str) else "",
        )

    @classmethod
    def of_file(cls, whole: object) -> StoredResult:
        """The view of a whole result file's JSON, its requests in it (`whole_stored_results`)."""
        requests = _mapping(whole).get("requests")
        return cls.of(
            whole,
            requests=(record for record in requests if isinstance(record, dict))
            if isinstance(requests, list)
            else (),
        )

    @property
    def baseline_points(self) -> tuple[dict[str, Any], ...]:
        """The points of the baseline measured in the same invocation, where the result kept
        it (older results did); none otherwise."""
        return self.baseline.points if self.baseline is not None else ()

    @property
    def build_flags(self) -> list[str] | None:
        flags = self.engine.get("build_flags")
        return flags if isinstance(flags, list) else None

    @property
    def gpus(self) -> list[dict[str, Any]]:
        """Each GPU's figures of a multi-GPU host, as its summary gives them (one of another
        shape stays in its place, empty: the GPUs are named by position)."""
        gpus = self.summary.get("gpus")
        return [_mapping(gpu) for gpu in gpus] if isinstance(gpus, list) else []


def stored_requests(run_ids: Iterable[int], *, phase: str | None = None) -> dict[int, list[Record]]:
    """The whole request records of some runs, in one query: {run id: records by index}."""
    wanted = list(run_ids)
    found: dict[int, list[Record]] = {pk: [] for pk in wanted}
    records = RequestRecord.objects.filter(run__in=wanted).order_by("run_id", "index")
    if phase is not None:
        records = records.filter(phase=phase)
    for run_id, details, *columns in records.values_list(
        "run_id", "details", *REQUEST_RECORD_FIELDS
    ):
        # The columns win: what a page queries is what the record says.
        found[run_id].append(details | dict(zip(REQUEST_RECORD_FIELDS, columns, strict=True)))
    return found


def stored_results(
    run_ids: Iterable[int | None], *, requests: bool = False
) -> dict[int, StoredResult]:
    """The stored results of some runs ({run id: view}, a run not found left out), with their
    request records when `requests` (two queries in all)."""
    wanted = sorted({pk for pk in run_ids if pk is not None})
    stored = dict(Run.objects.filter(pk__in=wanted).values_list("pk", "raw_result"))
    records = stored_requests(stored) if requests else {}
    return {pk: StoredResult.of(raw, requests=records.get(pk, ())) for pk, raw in stored.items()}


def stored_result(run_id: int | None, *, requests: bool = False) -> StoredResult:
    """One run's stored result (`stored_results`); an empty one for a run not found."""
    return stored_results([run_id], requests=requests).get(run_id or 0) or StoredResult()


def whole_file(stored: object, requests: list[Record]) -> object:
    """A stored result with its requests put back, as its file had it; a stored result that is
    not an object stands as it is."""
    return stored | {"requests": requests} if isinstance(stored, dict) else stored


def whole_stored_results(run_ids: Iterable[int | None]) -> dict[int, object]:
    """Some runs' results as their files had them (each stored result with its requests put
    back), for the runner's derivations that read a whole file: {run id: JSON}; a stored result
    that is not an object stands as it is."""
    wanted = sorted({pk for pk in run_ids if pk is not None})
    return whole_files(dict(Run.objects.filter(pk__in=wanted).values_list("pk", "raw_result")))


def whole_files(stored: Mapping[int, object]) -> dict[int, object]:
    """Stored results already read ({run id: `Run.raw_result`}) as their files had them, the
    requests of all read in one query (`whole_file`)."""
    records = stored_requests(pk for pk, raw in stored.items() if isinstance(raw, dict))
    return {pk: whole_file(raw, records.get(pk, [])) for pk, raw in stored.items()}


def whole_stored_result(run_id: int) -> object:
    """One run's result as its file had it (`whole_stored_results`); None for no such run."""
    return whole_stored_results([run_id]).get(run_id)
