"""What the API's serializers show beyond an object's own columns, read before they serialize it:
the serializers receive finished values and call nothing (the house rule).

Each function gives its objects, read together, the values their serializer reads as attributes:
a leaderboard row its evidence and definitions, a config its best run's figures, a run its
figures, a job its report. `FinishedValues` calls one of them from a generic view on the objects
it is about to serialize.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from leaderboard import selectors
from leaderboard.models import Config, Job, LeaderboardEntry, Run
from leaderboard.selectors.answers.serving import run_latency
from leaderboard.selectors.evidence.outcomes import run_flags
from leaderboard.stored_results import StoredResult


class RunFigures(TypedDict):
    """What `runs` gives a run (`figures`); the detail keys only with `detail`."""

    energy: dict[str, float | None] | None
    roofline: dict[str, Any] | None
    quality: dict[str, Any] | None
    verdicts: NotRequired[dict[str, Any]]
    acceptance_spread: NotRequired[dict[str, Any] | None]
    quality_tasks: NotRequired[list[dict[str, Any]] | None]
    latency: NotRequired[dict[str, Any] | None]


if TYPE_CHECKING:
    # The objects as their serializers read them, once finished here: the model with the values
    # set on it below (for annotations only; the objects stay the models' own instances, and at
    # run time, where drf-spectacular reads the serializers' hints, these names are the models).

    class FinishedEntry(LeaderboardEntry):
        evidence: dict[str, Any]

    class FinishedConfig(Config):
        energy_figures: dict[str, Any]
        protocol_figures: dict[str, Any]
        latency: dict[str, Any] | None

    class FinishedRun(Run):
        figures: RunFigures

    class FinishedJob(Job):
        report: dict[str, Any]

else:
    FinishedEntry, FinishedConfig, FinishedRun, FinishedJob = LeaderboardEntry, Config, Run, Job


def entries(rows: Sequence[LeaderboardEntry]) -> Sequence[FinishedEntry]:
    """Leaderboard rows with the evidence behind their numbers and their definitions
    (`evidence`), fetched at once for those that lack them."""
    finished = cast("Sequence[FinishedEntry]", rows)
    lacking = [row for row in finished if not hasattr(row, "evidence")]
    evidence = selectors.row_evidence(entries=lacking)
    for row in lacking:
        row.evidence = evidence[row.pk] | {
            "definitions": selectors.row_definitions(row, evidence[row.pk])
        }
    return finished


def configs(found: Sequence[Config], *, detail: bool = False) -> Sequence[FinishedConfig]:
    """Configs with their best runs' energy, roofline and quality (`energy_figures`), fetched at
    once; with `detail`, also their best row's protocol figures and their best run's latency."""
    figures = selectors.best_run_figures(configs=found)
    finished = cast("Sequence[FinishedConfig]", found)
    for config in finished:
        config.energy_figures = figures[config.pk]
        if detail:
            config.protocol_figures = selectors.config_protocol_figures(config=config)
            best = selectors.best_entry(config=config)
            config.latency = (
                run_latency(run_id=best.best_run_id) if best and best.best_run_id else None
            )
    return finished


def runs(found: Sequence[Run], *, detail: bool = False) -> Sequence[FinishedRun]:
    """Runs with what their stored result says (`figures`): energy, roofline and quality; with
    `detail`, also their verdicts, acceptance spread, quality tasks and latency."""
    # The requests are stored apart from the result: read once for all the runs.
    wholes = selectors.whole_results(runs=found)
    finished = cast("Sequence[FinishedRun]", found)
    for run in finished:
        whole = wholes.get(run.pk)
        # Read through the typed view; the roofline's derivation alone reads the whole file.
        stored = StoredResult.of_file(whole)
        run.figures = {
            "energy": selectors.energy_of(stored),
            "roofline": selectors.roofline_of(whole),
            "quality": selectors.quality_view(stored),
        }
        if detail:
            run.figures |= {
                "verdicts": run_flags(run=run),
                "acceptance_spread": selectors.acceptance_spread(run=run),
                "quality_tasks": selectors.quality_tasks_of(stored),
                "latency": run_latency(run_id=run.pk),
            }
    return finished


def job(found: Job) -> FinishedJob:
    """A job with its report (`report`: status, progress, cost, place in the queue)."""
    finished = cast("FinishedJob", found)
    finished.report = selectors.job_report(job=found)
    return finished


def jobs(found: Sequence[Job]) -> Sequence[FinishedJob]:
    """Jobs with their reports (`job`)."""
    for each in found:
        job(each)
    return cast("Sequence[FinishedJob]", found)


class FinishedValues:
    """A generic view whose objects are given their finished values (its `finish`, one of the
    functions above) before its serializer reads them."""

    def finish(self, objects: Sequence[Any]) -> object:
        raise NotImplementedError

    def get_serializer(self, *args: Any, **kwargs: Any) -> Any:
        if args and args[0] is not None:
            objects = list(args[0]) if kwargs.get("many") else [args[0]]
            self.finish(objects)
            if kwargs.get("many"):
                args = (objects, *args[1:])
        return super().get_serializer(*args, **kwargs)  # type: ignore[misc]
