"""The catalogue: configs, runs and their request records, models, hardware, targets and builds.

It owns the plain lookups behind the detail pages, the forms and the API's resources: a config
by key with its leaderboard rows, runs and best row (`best_entry`, and that row's concurrency or
categories figures: `config_protocol_figures`), a run by id and its raw
per-request records (`request_records`, with the columns `REQUEST_EXPORT_FIELDS` exports, or a
page of them: `request_records_page`), the
registered model files, the hardware that can serve jobs and each hardware's and target's
number of rows, and the engine builds seen.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.core.paginator import Page, Paginator
from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import Coalesce

from leaderboard.models import (
    REQUEST_RECORD_FIELDS,
    Config,
    EngineBuild,
    Hardware,
    LeaderboardEntry,
    ModelFile,
    RankingSummary,
    Run,
)
from leaderboard.selectors.evidence.categories import category_view
from leaderboard.selectors.evidence.output_length import output_length_view
from leaderboard.selectors.evidence.protocols import concurrency_view
from leaderboard.stored_results import StoredResult, whole_files


def config_by_key(*, key: str) -> Config | None:
    return Config.objects.select_related("target", "draft", "baseline").filter(key=key).first()


def config_entries(*, config: Config) -> QuerySet[LeaderboardEntry]:
    return config.entries.select_related("hardware", "baseline_entry__config").order_by(
        "-tokens_per_second"
    )


def config_runs(*, config: Config) -> QuerySet[Run]:
    """A config's runs, oldest first, without their stored results (a result file can hold
    megabytes; read `run_result` for the one run whose figures a page shows)."""
    return (
        config.runs.select_related("hardware", "job")
        .defer("raw_result")
        .order_by("created_at", "id")
    )


def best_entry(*, config: Config) -> LeaderboardEntry | None:
    return (
        config.entries.select_related("hardware", "best_run", "baseline_entry")
        .order_by("retired", "-tokens_per_second")
        .first()
    )


def config_protocol_figures(*, config: Config) -> dict:
    """{"concurrency", "categories", "output_length"}: the config's best row's concurrency
    figures and crossover (`concurrency_view`), its per-category figures (`category_view`) and
    its per-output-length figures (`output_length_view`); each None for a config of another
    protocol or without a row."""
    entry = best_entry(config=config)
    return {
        "concurrency": concurrency_view(entry=entry),
        "categories": category_view(entry=entry),
        "output_length": output_length_view(entry=entry),
    }


def run_by_id(*, run_id: int) -> Run | None:
    """A run with its config (and the config's models, which its provenance panel names),
    hardware, job and stored result (its requests are its records)."""
    return (
        Run.objects.select_related("config__target", "config__draft", "hardware", "job")
        .filter(id=run_id)
        .first()
    )


def whole_results(*, runs: Sequence[Run]) -> dict[int, object]:
    """Several runs' results as their files had them (`stored_results.whole_files`), for the
    runner's derivations that read a whole file (the roofline): the stored results the runs
    already hold, their requests read together; {run id: JSON}."""
    return whole_files({run.pk: run.raw_result for run in runs})


REQUEST_EXPORT_FIELDS = REQUEST_RECORD_FIELDS


def request_records(*, run: Run) -> list[dict]:
    """The run's raw per-request records, as plain dicts in the order they were measured."""
    return list(run.requests.order_by("index").values(*REQUEST_EXPORT_FIELDS))


def request_records_page(*, run: Run, number: int, size: int, count: int) -> Page:
    """One page of the run's request records (`request_records`' dicts), `size` a page, of the
    `count` it has; a number past the last page is the last."""
    records = run.requests.order_by("index").values(*REQUEST_EXPORT_FIELDS)
    paginator = Paginator(records, size)
    # The count is known (the run page caches it): the paginator need not count again.
    paginator.count = count
    return paginator.get_page(number)


def point_labels(*, run: Run) -> dict[int, str]:
    """What each point index of a run's requests stands for, from its stored points: the
    concurrency level ("16 concurrent"), the category ("code") or the depth ("4096 in"; with
    the output length where it varies, "512 in, 2048 out");
    indices whose point says none of these are left out (the page shows the index)."""
    points = StoredResult.of(run.raw_result).points
    labels: dict[int, str] = {}
    # An output-length run's points share their input length and differ in their output's
    # (a point of another shape is empty and counts for neither).
    shapes = [(point.get("input_tokens"), point.get("output_tokens")) for point in points if point]
    by_output = len({repr(i) for i, _ in shapes}) == 1 and len({repr(o) for _, o in shapes}) > 1
    for index, point in enumerate(points):
        if label := _point_label(point, several=len(points) > 1, by_output=by_output):
            labels[index] = label
    return labels


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _point_label(point: dict, *, several: bool, by_output: bool) -> str:
    """What one stored point stands for ("" where it says none of it)."""
    level, category, depth = (point.get(k) for k in ("concurrency", "category", "input_tokens"))
    output = _whole(point.get("output_tokens"))
    if _whole(level) is not None:
        return f"{level} concurrent"
    if isinstance(category, str) and category:
        return category[:60]
    if _whole(depth) is None or not several:
        return ""
    return f"{depth} in, {output} out" if by_output and output is not None else f"{depth} in"


def registered_models(*, role: str | None = None) -> QuerySet[ModelFile]:
    models = ModelFile.objects.all()
    return models.filter(role=role) if role else models


def servable_hardware() -> QuerySet[Hardware]:
    return Hardware.objects.exclude(queue_name="").order_by("gpu_name")


def hardware_summaries() -> list[Hardware]:
    """Every hardware kind with its number of leaderboard rows (`results`), by GPU name: summed
    over the rankings' summaries."""
    return list(
        Hardware.objects.annotate(results=Coalesce(Sum("ranking_summaries__rows"), 0)).order_by(
            "gpu_name", "slug"
        )
    )


def hardware_by_slug(*, slug: str) -> Hardware | None:
    return Hardware.objects.filter(slug=slug).first()


def target_summaries() -> list[dict]:
    """Each target model with its number of leaderboard rows and hardware kinds."""
    rows = (
        RankingSummary.objects.values("target_name")
        .annotate(results=Sum("rows"), hardware=Count("hardware", distinct=True))
        .order_by("target_name")
    )
    return [
        {"name": r["target_name"], "results": r["results"], "hardware": r["hardware"]} for r in rows
    ]


def engine_builds() -> QuerySet[EngineBuild]:
    return EngineBuild.objects.order_by("-first_seen", "release")
