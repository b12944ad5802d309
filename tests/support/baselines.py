"""A separately measured baseline for tests: a speculative job with its own drafting measures its
paired baseline in the same run, so no baseline job is queued for it; tests about pairing with a
separately measured baseline submit the baseline config itself, as a user would."""

from __future__ import annotations

import copy

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
