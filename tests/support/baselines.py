"""A separately measured baseline for tests: a speculative job with its own drafting measures its
paired baseline in the same run, so no baseline job is queued for it; tests about pairing with a
separately measured baseline submit the baseline config itself, as a user would. Also the engine
a result says it was measured by, and the fidelity each of its requests was graded."""

from __future__ import annotations

import copy
import hashlib

from leaderboard import services
from leaderboard.models import Job, Run
from runner import stats
from runner.evidence import derived_speedup
from runner.pairing import point_speed
from runner.results import BenchmarkResult, Provenance, Summary

# A self-draft config of the tiny model that measures its paired baseline beside itself.
DRAFT_SIMPLE = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-qwen3.gguf",
    "spec_types": ["draft-simple"],
    "n_max": 4,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


# An n-gram config of the tiny model (no draft model): its paired baseline is measured beside it.
NGRAM_MOD = {
    "target_model": "tiny-qwen3.gguf",
    "spec_types": ["ngram-mod"],
    "protocol": {"name": "quick", "n_predict": 64, "runs": 2},
}
CUDA_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=90"]
CPU_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON"]


def start(job: Job) -> None:
    """A GPU host's first report of `job`: it started."""
    services.record_progress(job_id=job.pk, progress={"phase": "started"})


def finish(job: Job, result: dict) -> Run | None:
    """A GPU host's reports of `job` as the services record them: started, then its result."""
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    return services.record_result(job_id=job.pk, result=result)


def submit_baseline(job: Job) -> Job:
    """Submit `job`'s paired baseline config (its canonical form) on the same hardware, by the
    same owner, and return that Job."""
    baseline = job.config.baseline
    assert baseline is not None, f"{job.config.label} has no paired baseline"
    submitted = services.submit_config(
        owner=job.owner, data=baseline.canonical, hardware_slug=job.hardware.slug
    )
    assert submitted.config_id == baseline.pk, "the canonical config must map to the same row"
    return submitted


def speculative_and_baseline(
    owner, hardware, *, data: dict = DRAFT_SIMPLE, started: bool = False
) -> tuple[Job, Job]:
    """A speculative job and its paired baseline, submitted separately (and, if `started`, both
    reported started by their host)."""
    speculative = services.submit_config(owner=owner, data=data, hardware_slug=hardware.slug)
    baseline = submit_baseline(speculative)
    for job in (speculative, baseline) if started else ():
        start(job)
    return speculative, baseline


def on_engine(result: dict, *, backend: str, flags: list[str]) -> dict:
    """A runner result as if measured by an engine of this backend and these build flags."""
    engine = result["engine"] | {"backend": backend, "build_flags": flags}
    result["engine"] = engine
    result["provenance"]["engine"] = engine
    return result


def diverged(result: dict, *kinds: str | None) -> dict:
    """Mark each measured request identical (None) or diverged at token 10 with a class, its
    only divergence to the request's end (runner.fidelity judges every one); a diverged
    request's output is its own (another hash: the door pairs divergences with outputs)."""
    for record, kind in zip(result["requests"], kinds, strict=True):
        if kind is not None:
            record["output_sha256"] = hashlib.sha256(
                f"diverged-{record['index']}".encode()
            ).hexdigest()
        record["first_divergence"] = None if kind is None else 10
        record["divergence"] = kind
        record["divergence_margin"] = None if kind is None else 0.05
        record["divergences"] = (
            [] if kind is None else [{"position": 10, "margin": 0.05, "kind": kind}]
        )
    return result


def with_baseline_section(result: dict, baseline: dict) -> dict:
    """A speculative result that carries its paired baseline measured in the same runner
    invocation, as runner.benchmark.run_benchmark writes one (checked by the runner's model)."""
    result = copy.deepcopy(result)
    section = {name: baseline[name] for name in ("config", "config_key", "synthetic", "points")}
    section["requests"] = baseline["requests"]
    # A section has no pairing fields and no run-wide provenance (engine, host, times).
    section["summary"] = {k: v for k, v in baseline["summary"].items() if k in Summary.model_fields}
    section["provenance"] = {
        k: v for k, v in baseline["provenance"].items() if k in Provenance.model_fields
    }
    result["baseline"] = section
    # The pairing figures as the runner derives them from the two sections (the door checks
    # each against them): every point's ratio to the baseline's, the summary's from the two
    # sections' measured requests, and the baseline's own decode mean.
    for point, reference in zip(result["points"], section["points"], strict=True):
        point["speedup"] = stats.ratio(point_speed(point), point_speed(reference))
    result["summary"]["speedup"] = derived_speedup(result)
    result["summary"]["baseline_decode_tokens_per_second"] = section["summary"][
        "decode_tokens_per_second"
    ]["mean"]
    return BenchmarkResult.model_validate(result).model_dump(mode="json")
