"""Measured configs for page tests: submitted, then given results through the services (draft-simple
configs, any config with its paired baseline, three configs against one baseline, looped and
energy-carrying results), a measured run whose stored records' drafting a test sets, and a
concurrency config to submit."""

from __future__ import annotations

from leaderboard import services
from leaderboard.models import Config, Job, RequestRecord, Run
from leaderboard.services.board import mark_test_weights
from runner.energy import energy_figures
from tests.support.baselines import with_baseline_section


def draft_simple(n_max: int, *, runs: int = 3) -> dict:
    return {
        "target_model": "tiny-qwen3.gguf",
        "draft_model": "tiny-qwen3.gguf",
        "spec_types": ["draft-simple"],
        "n_max": n_max,
        "protocol": {"name": "quick", "n_predict": 64, "runs": runs},
    }


def measure(
    owner,
    hardware,
    make_result,
    n_max: int,
    decode: list[float],
    *,
    runs: int | None = None,
    **options,
) -> Job:
    """Submit a config, then store its result with the paired baseline measured in the same run
    (a speculative job with its own drafting measures it beside itself: no baseline job). The
    protocol plans `runs` requests, one for each decode figure unless given: the door refuses a
    result that measured fewer or more than its plan."""
    runs = runs or len(decode)
    job = services.submit_config(
        owner=owner, data=draft_simple(n_max, runs=runs), hardware_slug=hardware.slug
    )
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, decode, draft=(40, 30), tau=2.2, **options),
            # The usual baseline, 51 tok/s on average; one request where the plan asks one.
            make_result(job.config.baseline.key, [50.0, 52.0] if runs > 1 else [51.0], **options),
        ),
    )
    job.refresh_from_db()
    return job


# Against the usual baseline (50, 52 tok/s): clearly faster, within noise, clearly slower.
SPEEDS = {4: [100.0, 104.0], 2: [60.0, 60.5], 5: [30.0, 31.0]}


def measure_three_ways(owner, hardware, models, make_result) -> dict[int, Config]:
    """Draft-simple configs of n_max 4, 2 and 5 measured at SPEEDS, their models cleared of the
    test-weights mark as an admin could (only ranked rows are charted): each config by n_max."""
    mark_test_weights(models=models.values(), test_weights=False)
    return {
        n_max: measure(owner, hardware, make_result, n_max, decode).config
        for n_max, decode in SPEEDS.items()
    }


def measure_config(owner, hardware, make_result, data, decode, baseline=(50.0, 52.0), **options):
    """Submit any config, then store its result with the paired baseline measured in the same
    run at the given speeds (`measure` for a draft-simple config and the usual baseline)."""
    job = services.submit_config(owner=owner, data=data, hardware_slug=hardware.slug)
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, decode, draft=(40, 30), tau=2.2, **options),
            make_result(job.config.baseline.key, list(baseline), **options),
        ),
    )
    job.refresh_from_db()
    return job


def concurrency_at(levels: list[int], **extra) -> dict:
    """A config of the tiny target on the concurrency protocol at these levels, 512 tokens in and
    256 out: 784 tokens of context for each slot."""
    protocol = {"name": "concurrency", "levels": levels, "input_tokens": 512, "output_tokens": 256}
    return {"target_model": "tiny-qwen3.gguf", "protocol": protocol} | extra


def quick_config(spec_type: str, n_max: int, *, prompt: str | None = None) -> dict:
    """A config of the tiny target on the quick protocol (its own prompt if given); draft-simple
    drafts with the target's own file."""
    protocol = {"name": "quick", "n_predict": 64, "runs": 3} | (
        {"prompt": prompt} if prompt else {}
    )
    data = {
        "target_model": "tiny-qwen3.gguf",
        "spec_types": [spec_type],
        "n_max": n_max,
        "protocol": protocol,
    }
    return data | ({"draft_model": "tiny-qwen3.gguf"} if spec_type == "draft-simple" else {})


def degenerate_result(make_result, key: str, decode: list[float]) -> dict:
    """A result whose output looped (repetitive 4-grams): its batch is degenerate."""
    result = make_result(key, decode, draft=(40, 30), tau=2.2)
    for record in result["requests"]:
        record["distinct_4gram_ratio"] = 0.01
    result["summary"]["degenerate"] = True
    return result


def with_energy(result: dict, joules_per_request: float) -> dict:
    """The result with NVML's energy on every request and the summary those give."""
    for record in result["requests"]:
        record["energy_joules"] = joules_per_request
    result["summary"] |= energy_figures(result["requests"])
    return result


def measured_run(owner, hardware, make_result, decode: list[float]) -> Run:
    """A draft-simple config (n_max 4) measured once, a request for each decode tok/s: its run."""
    job = measure(owner, hardware, make_result, 4, decode, runs=len(decode))
    return Run.objects.get(job=job, config=job.config)


def set_drafts(run: Run, drafts: list[tuple[int, int, float | None]]) -> None:
    """Overwrite the run's stored records' (drafted, accepted, tau), in index order."""
    records = list(run.requests.filter(phase="measure").order_by("index"))
    assert len(records) == len(drafts)
    for record, (drafted, accepted, tau) in zip(records, drafts, strict=True):
        record.draft_n, record.draft_n_accepted, record.tau = drafted, accepted, tau
    RequestRecord.objects.bulk_update(records, ["draft_n", "draft_n_accepted", "tau"])
