"""What a GPU host does with a job message: fetch, check once, run, report.

A job message is the plain JSON the service sends (``leaderboard.services.jobs.job_payload``):
the config's canonical JSON, each model as it was registered (its path and sha256; a Hub file's
repository, file, commit and size as well) and whether the job measures its paired baseline
beside it. ``run_job`` turns one into a ``JobOutcome``: the result, or a failure (a benchmark
that fails is a result, not an exception to retry), or nothing to report when it was cancelled.

Each model's bytes are checked against the registered sha256 once on this side, before any engine
starts: a Hub file by the model cache as it is fetched (``runner.model_cache``), a local file
here. The digest is computed once per file (``runner.gguf.inspect.sha256_file``'s cache, which a
finished download keeps), so the benchmark's own model check reads it instead of hashing again.
That the result names the registered files is the service's check when it records it; nothing
here touches a database. Plain Python: the Celery task only sends back what this returns.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.benchmark import resolve_model, run_benchmark
from runner.config import parse_config
from runner.errors import BenchmarkCancelled, ModelCheckError, RunnerError
from runner.gguf.inspect import sha256_file
from runner.hub import HubFile
from runner.model_cache import ModelCache, download_progress
from runner.provenance import describe_gpus, gpu_set_problem, visible_gpus
from runner.results import BenchmarkResult

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[dict[str, Any]], None]

# A job reports at most one progress event a second per phase (besides each phase's first and
# last), however fast the runner measures.
PROGRESS_INTERVAL_S = 1.0


@dataclass(frozen=True)
class JobHost:
    """Where this host keeps its models, and how it fetches the Hub's into its model cache."""

    models_dir: Path
    cache_dir: Path
    hf_endpoint: str
    cache_max_bytes: int = 0
    hf_token: str | None = None


@dataclass(frozen=True)
class JobSucceeded:
    """The job's validated result, to send back."""

    result: BenchmarkResult


@dataclass(frozen=True)
class JobFailed:
    """Why the job failed, in one readable line, and the engine's log tail where one ran."""

    error: str
    log_tail: str = ""


@dataclass(frozen=True)
class JobCancelled:
    """The job was cancelled while it ran: nothing to send (the service cancelled it)."""


JobOutcome = JobSucceeded | JobFailed | JobCancelled


class _Throttled:
    """Forwards progress events, at most one every PROGRESS_INTERVAL_S per phase."""

    def __init__(self, send: ProgressCallback) -> None:
        self.send = send
        self.last_phase: str | None = None
        self.last_sent = 0.0

    def __call__(self, event: dict[str, Any]) -> None:
        now = time.monotonic()
        done = event.get("done") == event.get("total")
        if (
            event.get("phase") == self.last_phase
            and not done
            and now - self.last_sent < PROGRESS_INTERVAL_S
        ):
            return
        self.last_phase, self.last_sent = event.get("phase"), now
        self.send(event)


def started_event() -> dict[str, Any]:
    """The event that claims a job: on a GPU host it advertises the GPUs its engine sees
    (``runner.provenance.visible_gpus``), so that the site lets a host claim a job of a kind
    only with that kind's GPUs (two RTX 3090s for a 2x RTX 3090 kind); off NVML it is the phase
    alone."""
    event: dict[str, Any] = {"phase": "started"}
    gpus = visible_gpus()
    if gpus is not None:
        event["gpus"] = gpus
    return event


def _kind_problem(kind_gpus: object) -> str | None:
    """Why this host's engine cannot run a job of the kind whose GPUs the message names (its
    ``gpus``: each one's name and memory), or None; nothing to check without them or off NVML."""
    have = visible_gpus()
    if not isinstance(kind_gpus, list) or not kind_gpus or have is None:
        return None
    wanted = [
        gpu for gpu in kind_gpus if isinstance(gpu, dict) and isinstance(gpu.get("name"), str)
    ]
    if len(wanted) != len(kind_gpus):
        return None
    return gpu_set_problem(wanted=wanted, have=have, label=describe_gpus(wanted))


def run_job(
    message: Mapping[str, Any],
    *,
    host: JobHost,
    progress: ProgressCallback,
    should_cancel: Callable[[], bool] | None = None,
) -> JobOutcome:
    """Run one job message on this host: its models fetched and checked, its config measured.

    Progress goes to ``progress`` as it happens ("started" first, ``started_event``); every
    error becomes a ``JobFailed``, a cancellation ``JobCancelled``.
    """
    job_id = message.get("job_id")
    report = _Throttled(progress)
    report(started_event())
    if problem := _kind_problem(message.get("gpus")):
        return JobFailed(error=f"this host cannot run a job of its hardware kind: {problem}")
    try:
        config = parse_config(message["config"])
        models = {role: row for role, row in message["models"].items() if row}
        with contextlib.ExitStack() as held:
            models_dir = _fetch_hub_models(models, host=host, progress=report, held=held)
            _check_local_models(models, models_dir=host.models_dir)
            result = run_benchmark(
                config,
                models_dir=models_dir,
                with_baseline=bool(message.get("with_baseline", False)),
                progress=report,
                should_cancel=should_cancel,
            )
    except BenchmarkCancelled:
        logger.info("job %s cancelled", job_id)
        return JobCancelled()
    except RunnerError as error:
        return JobFailed(str(error), getattr(error, "log_tail", ""))
    except Exception as error:
        logger.exception("job %s failed inside the worker", job_id)
        return JobFailed(f"internal worker error: {type(error).__name__}: {error}")
    return JobSucceeded(result)


def _fetch_hub_models(
    models: Mapping[str, Mapping[str, Any]],
    *,
    host: JobHost,
    progress: ProgressCallback,
    held: contextlib.ExitStack,
) -> Path:
    """Fetch the job's Hugging Face models into the model cache (resumed; size and sha256
    checked there; download progress reported) and hold them in ``held`` until the run is
    over, so that eviction leaves them alone; returns the models directory the run uses."""
    hub = [row for row in models.values() if row.get("hf_repo")]
    if not hub:
        return host.models_dir
    cache = ModelCache(
        host.cache_dir,
        endpoint=host.hf_endpoint,
        max_bytes=host.cache_max_bytes,
        token=host.hf_token,
    )
    mixed = len(hub) < len(models)
    if mixed and cache.root.resolve() != host.models_dir.resolve():
        raise ModelCheckError(
            "this job mixes a local model and a Hugging Face one: on this host "
            "SPECBOARD_MODEL_CACHE_DIR must be SPECBOARD_MODELS_DIR (its default)"
        )
    downloading = download_progress(progress)
    for row in hub:
        hub_file = HubFile(
            repo=row["hf_repo"],
            file=row["hf_file"],
            revision=row["hf_revision"],
            size_bytes=row["size_bytes"],
            sha256=row["sha256"],
        )
        held.enter_context(cache.in_use(cache.fetch(hub_file, progress=downloading)))
    return cache.root


def _check_local_models(models: Mapping[str, Mapping[str, Any]], *, models_dir: Path) -> None:
    """Refuse a local model whose bytes are not the registered ones: a file changed after
    registration must not cost a benchmark."""
    for role, row in models.items():
        if row.get("hf_repo"):
            continue  # checked by the model cache as it was fetched
        if sha256_file(resolve_model(row["path"], models_dir)) != row["sha256"]:
            raise ModelCheckError(
                f"{role} model {row['path']} on this worker differs from the registered "
                "file (sha256 mismatch): it was changed after registration"
            )
