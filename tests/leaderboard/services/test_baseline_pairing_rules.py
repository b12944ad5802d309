"""Baseline pairing: a speedup only against a baseline of the same engine backend and build
flags, the one measured in the same runner invocation first, and baselines scheduled again when
the ones on record cannot pair with what the workers measure."""

from __future__ import annotations

import pytest

from leaderboard import services
from leaderboard.models import Job, LeaderboardEntry
from runner.config import parse_config
from tests.support.baselines import DRAFT_SIMPLE, finish, submit_baseline, with_baseline_section

# Synthetic acceptance does not measure its baseline beside itself: it gets a baseline job.
SYNTHETIC = DRAFT_SIMPLE | {"n_max": 2, "spec_synth_len": 3.0}
CUDA_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=90"]
CPU_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON"]


def on_engine(result: dict, *, backend: str, flags: list[str]) -> dict:
    """A runner result as if measured by an engine of this backend and these build flags."""
    engine = result["engine"] | {"backend": backend, "build_flags": flags}
    result["engine"] = engine
    result["provenance"]["engine"] = engine
    return result


def row_of(job: Job) -> LeaderboardEntry:
    return LeaderboardEntry.objects.get(config=job.config, hardware=job.hardware)


@pytest.fixture
def jobs(user, models, hardware, enqueued) -> tuple[Job, Job]:
    """A speculative job and its paired baseline, submitted and measured separately."""
    speculative = services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)
    return speculative, submit_baseline(speculative)


def test_a_cpu_backend_baseline_is_never_paired_with_a_cuda_run_of_the_same_gpu_and_release(
    jobs, make_result
):
    speculative, baseline = jobs
    cpu = make_result(baseline.config.key, [20.0, 20.0])
    finish(baseline, on_engine(cpu, backend="cpu", flags=CPU_FLAGS))
    cuda = make_result(speculative.config.key, [150.0, 150.0])
    finish(speculative, on_engine(cuda, backend="cuda", flags=CUDA_FLAGS))

    row = row_of(speculative)
    assert row.speedup is None and row.baseline_run is None and row.baseline_entry is None
    assert row.pairing_note == (
        "baseline measured on the cpu backend, this row on cuda: not comparable"
    )
    # Still one row per config, hardware and release: the pairing is refused, not split.
    assert LeaderboardEntry.objects.filter(config=baseline.config).count() == 1


def test_a_baseline_of_the_same_backend_and_build_flags_gives_the_speedup(jobs, make_result):
    speculative, baseline = jobs
    slow = make_result(baseline.config.key, [50.0, 50.0])
    finish(baseline, on_engine(slow, backend="cuda", flags=CUDA_FLAGS))
    # The same flags in another order are the same build.
    fast = make_result(speculative.config.key, [150.0, 150.0])
    finish(speculative, on_engine(fast, backend="cuda", flags=CUDA_FLAGS[::-1]))

    row = row_of(speculative)
    assert row.speedup == pytest.approx(3.0) and row.pairing_note == ""
    assert row.baseline_run == baseline.run and row.baseline_entry.config == baseline.config


def test_a_baseline_built_with_other_flags_is_refused_whichever_finishes_first(jobs, make_result):
    speculative, baseline = jobs
    fast = make_result(speculative.config.key, [150.0, 150.0])
    finish(speculative, on_engine(fast, backend="cuda", flags=CUDA_FLAGS))
    assert row_of(speculative).pairing_note == (
        "no baseline measured on this hardware and release yet"
    )
    other = CUDA_FLAGS + ["-DGGML_CUDA_FORCE_MMQ=ON"]
    finish(
        baseline, on_engine(make_result(baseline.config.key, [50.0]), backend="cuda", flags=other)
    )

    row = row_of(speculative)
    assert row.speedup is None
    assert row.pairing_note == "baseline built with other engine build flags: not comparable"


def test_the_baseline_measured_in_the_same_runner_invocation_is_preferred(
    jobs, user, hardware, make_result
):
    speculative, baseline = jobs
    # A faster baseline batch, measured on its own by a worker with the same engine.
    finish(baseline, make_result(baseline.config.key, [80.0, 80.0]))
    paired = with_baseline_section(
        make_result(speculative.config.key, [150.0, 150.0], release="b11434"),
        make_result(baseline.config.key, [50.0, 50.0]),
    )

    spec_run = services.import_runner_result(
        owner=user, hardware=hardware, result=paired, source="a runner file"
    )[-1]

    row = LeaderboardEntry.objects.get(config=spec_run.config, hardware=hardware)
    baseline_row = LeaderboardEntry.objects.get(config=baseline.config, hardware=hardware)
    assert baseline_row.runs_count == 2 and baseline_row.tokens_per_second == pytest.approx(80.0)
    assert row.baseline_run.decode_mean == pytest.approx(50.0)
    assert row.speedup == pytest.approx(3.0)


def test_without_a_same_invocation_baseline_the_best_comparable_batch_is_used(
    jobs, user, hardware, make_result
):
    speculative, baseline = jobs
    again = services.submit_config(
        owner=user, data=DRAFT_SIMPLE | {"n_max": 2}, hardware_slug=hardware.slug
    )
    finish(baseline, make_result(baseline.config.key, [50.0, 50.0]))
    slower = Job.objects.create(
        owner=user, config=baseline.config, hardware=hardware, engine_release="b11434"
    )
    finish(slower, make_result(baseline.config.key, [40.0, 40.0]))
    finish(speculative, make_result(speculative.config.key, [150.0, 150.0]))
    finish(again, make_result(again.config.key, [100.0, 100.0]))

    assert row_of(speculative).speedup == pytest.approx(3.0)
    assert row_of(again).speedup == pytest.approx(2.0)
    assert row_of(speculative).baseline_run == baseline.run


def test_an_imported_baseline_does_not_stand_in_for_the_workers_own(
    user, models, hardware, enqueued, make_result
):
    baseline_config = parse_config(DRAFT_SIMPLE).baseline()
    imported = on_engine(make_result(baseline_config, [20.0]), backend="cpu", flags=CPU_FLAGS)
    services.import_runner_result(owner=user, hardware=hardware, result=imported, source="file")

    services.submit_config(owner=user, data=SYNTHETIC, hardware_slug=hardware.slug)

    scheduled = Job.objects.get(auto_scheduled=True)
    assert scheduled.config.key == baseline_config.key


def test_a_baseline_the_workers_measured_on_their_current_engine_is_not_measured_again(
    jobs, user, hardware, make_result
):
    speculative, baseline = jobs
    finish(
        baseline,
        on_engine(make_result(baseline.config.key, [50.0]), backend="cuda", flags=CUDA_FLAGS),
    )
    finish(
        speculative,
        on_engine(make_result(speculative.config.key, [150.0]), backend="cuda", flags=CUDA_FLAGS),
    )

    services.submit_config(owner=user, data=SYNTHETIC, hardware_slug=hardware.slug)

    assert not Job.objects.filter(auto_scheduled=True).exists()


def test_a_baseline_from_an_engine_the_workers_no_longer_use_is_measured_again(
    jobs, user, hardware, make_result
):
    speculative, baseline = jobs
    finish(
        baseline,
        on_engine(make_result(baseline.config.key, [20.0]), backend="cpu", flags=CPU_FLAGS),
    )
    finish(
        speculative,
        on_engine(make_result(speculative.config.key, [150.0]), backend="cuda", flags=CUDA_FLAGS),
    )

    later = services.submit_config(owner=user, data=SYNTHETIC, hardware_slug=hardware.slug)

    again = Job.objects.get(auto_scheduled=True)
    assert again.status == Job.Status.QUEUED and again.config == baseline.config
    assert again.baseline_for == later
