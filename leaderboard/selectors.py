"""Every read Specboard's pages and API make: typed functions returning querysets or plain data."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import F, Q, QuerySet

from leaderboard.models import Config, Hardware, Job, LeaderboardEntry, ModelFile, Run
from runner.config import SPEC_TYPES

LEADERBOARD_ORDERINGS = {
    "tokens_per_second": "tok/s",
    "speedup": "speedup",
    "acceptance_rate": "acceptance",
    "tau": "tau",
}
SOURCES = {
    "all": "all results",
    "measured": "measured by our workers",
    "self-reported": "self-reported",
}
PROTOCOLS = ("quick", "context-sweep", "depth")


def spec_type_q(spec_type: str) -> Q:
    """Configs whose comma-separated speculative label contains exactly this type."""
    field = "config__spec_label"
    return (
        Q(**{field: spec_type})
        | Q(**{f"{field}__startswith": f"{spec_type},"})
        | Q(**{f"{field}__endswith": f",{spec_type}"})
        | Q(**{f"{field}__contains": f",{spec_type},"})
    )


def leaderboard_entries(
    *,
    target: str = "",
    hardware: str = "",
    spec_type: str = "",
    protocol: str = "",
    source: str = "all",
    ordering: str = "tokens_per_second",
    include_retired: bool = False,
) -> QuerySet[LeaderboardEntry]:
    """Leaderboard rows, filtered and sorted best first; rows without the sort value come last."""
    entries = LeaderboardEntry.objects.select_related(
        "config", "config__target", "config__draft", "hardware", "baseline_entry"
    )
    if not include_retired:
        entries = entries.filter(retired=False)
    if target:
        entries = entries.filter(config__target_name=target)
    if hardware:
        entries = entries.filter(hardware__slug=hardware)
    if spec_type:
        entries = entries.filter(spec_type_q(spec_type))
    if protocol:
        entries = entries.filter(config__protocol=protocol)
    if source == "measured":
        entries = entries.filter(self_reported=False)
    elif source == "self-reported":
        entries = entries.filter(self_reported=True)
    field = ordering if ordering in LEADERBOARD_ORDERINGS else "tokens_per_second"
    return entries.order_by(F(field).desc(nulls_last=True), "-tokens_per_second", "id")


def leaderboard_filter_choices() -> dict[str, list[tuple[str, str]]]:
    """The values that the leaderboard's filters offer, from the data present."""
    targets = LeaderboardEntry.objects.values_list("config__target_name", flat=True).distinct()
    hardware = (
        Hardware.objects.filter(entries__isnull=False).distinct().values_list("slug", "gpu_name")
    )
    labels = LeaderboardEntry.objects.values_list("config__spec_label", flat=True).distinct()
    present = sorted({part for label in labels for part in label.split(",")} - {"none"})
    spec_types = [("none", "none (baseline)")] + [(t, t) for t in present]
    spec_types += [(t, t) for t in SPEC_TYPES if t not in present]
    return {
        "target": [(t, t) for t in sorted(targets)],
        "hardware": [(slug, f"{name} ({slug})") for slug, name in hardware],
        "spec_type": spec_types,
        "protocol": [(p, p) for p in PROTOCOLS],
        "source": list(SOURCES.items()),
        "ordering": list(LEADERBOARD_ORDERINGS.items()),
    }


def config_by_key(*, key: str) -> Config | None:
    return Config.objects.select_related("target", "draft", "baseline").filter(key=key).first()


def config_entries(*, config: Config) -> QuerySet[LeaderboardEntry]:
    return config.entries.select_related("hardware", "baseline_entry__config").order_by(
        "-tokens_per_second"
    )


def config_runs(*, config: Config) -> QuerySet[Run]:
    return (
        config.runs.select_related("hardware", "job")
        .prefetch_related("requests")
        .order_by("created_at", "id")
    )


def config_chart_data(*, runs: list[Run]) -> dict:
    """Plain lists for the tok/s-per-run chart: one point per run with its 95% interval."""
    return {
        "labels": [f"run {i + 1} · {r.hardware.gpu_name}" for i, r in enumerate(runs)],
        "definition": runs[0].tps_definition if runs else "decode",
        "mean": [r.tokens_per_second for r in runs],
        "ci95_low": [r.ci95[0] for r in runs],
        "ci95_high": [r.ci95[1] for r in runs],
        "acceptance": [r.acceptance_rate for r in runs],
        "requests": [
            [(q.decode_tokens_per_second, q.end_to_end_tokens_per_second) for q in r.requests.all()]
            for r in runs
        ],
    }


def user_jobs(*, user: AbstractBaseUser) -> QuerySet[Job]:
    return (
        Job.objects.filter(owner=user).select_related("config", "hardware").order_by("-created_at")
    )


def job_by_id(*, job_id: int) -> Job | None:
    return (
        Job.objects.select_related("config", "hardware", "owner", "run").filter(id=job_id).first()
    )


def job_status(*, job: Job) -> dict:
    """What the job page and its JSON show: status, progress as a fraction, error and log tail."""
    progress = job.progress or {}
    total = progress.get("total") or 0
    run = getattr(job, "run", None) if job.status == Job.Status.SUCCEEDED else None
    return {
        "id": job.pk,
        "status": job.status,
        "active": job.is_active,
        "phase": progress.get("phase", ""),
        "done": progress.get("done", 0),
        "total": total,
        "tokens": progress.get("tokens", 0),
        "elapsed_s": progress.get("elapsed_s"),
        "percent": round(100 * progress.get("done", 0) / total) if total else (100 if run else 0),
        "error": job.error,
        "log_tail": job.log_tail,
        "config_key": job.config.key,
        "run_id": run.pk if run else None,
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


def registered_models(*, role: str | None = None) -> QuerySet[ModelFile]:
    models = ModelFile.objects.all()
    return models.filter(role=role) if role else models


def servable_hardware() -> QuerySet[Hardware]:
    return Hardware.objects.exclude(queue_name="").order_by("gpu_name")
