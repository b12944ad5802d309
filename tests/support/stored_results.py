"""Stored results to read back through the API: two recorded runs of the speculative config,
and rewrites of a run's stored result (its summary's figures, or the host it ran on made a CUDA
host with a known bandwidth and model sizes) for the energy and roofline fields."""

from __future__ import annotations

import pytest

from leaderboard import services
from leaderboard.models import Run
from leaderboard.stored_results import whole_stored_result
from runner import roofline
from tests.support.api_clients import SPECULATIVE

BANDWIDTH = 4_916_736_000_000
WEIGHTS = 658_432
# A roofline as an older file stored it (the target's weights alone): never what is shown.
ROOFLINE = {
    "peak_bandwidth_bytes_per_second": BANDWIDTH,
    "bytes_per_token": WEIGHTS,
    "ceiling_tokens_per_second": BANDWIDTH / WEIGHTS,
    "fraction": 0.001,
    "flag": None,
}


def record_two_runs(*, user, hardware, make_result) -> list[Run]:
    """Two runs of one speculative config, as the runner's results of a CPU host record them."""
    runs = []
    for decode in ([100.0, 110.0], [150.0, 160.0]):
        job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
        runs.append(
            services.record_result(job_id=job.pk, result=make_result(job.config.key, decode))
        )
    return runs


@pytest.fixture
def recorded(models, hardware, user, enqueued, make_result) -> list[Run]:
    """`record_two_runs`: the slower run first."""
    return record_two_runs(user=user, hardware=hardware, make_result=make_result)


def store_summary(run: Run, **figures) -> None:
    """The run's stored summary with `figures` written over it."""
    raw = dict(run.raw_result)
    raw["summary"] = dict(raw["summary"]) | figures
    Run.objects.filter(pk=run.pk).update(raw_result=raw)


def on_gpu(run: Run, *, kv_elements: int | None = None, **figures) -> None:
    """The stored result as a CUDA host's: its engine, its GPU's bandwidth, its target's weight
    bytes and K/V size (unknown unless given) and its draft's, with the summary figures given."""
    raw = dict(run.raw_result)
    raw["engine"] = dict(raw["engine"]) | {"backend": "cuda"}
    provenance = dict(raw["provenance"])
    provenance["system"] = dict(provenance["system"]) | {
        "gpu_peak_bandwidth_bytes_per_second": BANDWIDTH
    }
    target = dict(provenance["models"]["target"]) | {
        "weight_bytes_per_token": WEIGHTS,
        "kv_elements_per_token": kv_elements,
    }
    draft = provenance["models"]["draft"]
    draft = (
        dict(draft) | {"weight_bytes_per_token": 1_000, "kv_elements_per_token": None}
        if draft
        else None
    )
    provenance["models"] = {"target": target, "draft": draft}
    raw["provenance"] = provenance
    raw["summary"] = dict(raw["summary"]) | figures
    Run.objects.filter(pk=run.pk).update(raw_result=raw)


def expected_roofline(run: Run) -> dict:
    """The roofline the runner derives from the run's stored result, as it is now."""
    whole = whole_stored_result(run.pk)
    return roofline.derived_roofline(whole, run=whole)
