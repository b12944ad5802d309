"""Baseline pairing (services.pairing): a row's speedup only against a baseline of the same engine
backend and build flags, the one measured in the same runner invocation first, else the best
comparable batch, whichever finishes first; a categories row's speedup is the geometric mean of
its categories' (the runner's definition)."""

from __future__ import annotations

import math

import pytest

from leaderboard import services
from leaderboard.models import Job, LeaderboardEntry
from runner.evidence import derived_speedup
from tests.support.baselines import (
    CPU_FLAGS,
    CUDA_FLAGS,
    DRAFT_SIMPLE,
    finish,
    on_engine,
    speculative_and_baseline,
    start,
    submit_baseline,
    with_baseline_section,
)
from tests.support.protocol_results import categories_config
from tests.support.protocol_runs import (
    CATEGORIES,
    CATEGORY_BASELINE,
    CATEGORY_DECODE,
    categories_result_file,
)


@pytest.fixture
def jobs(user, models, hardware, enqueued) -> tuple[Job, Job]:
    """A speculative job and its paired baseline, submitted and measured separately."""
    return speculative_and_baseline(user, hardware)


def row_of(job: Job) -> LeaderboardEntry:
    return LeaderboardEntry.objects.get(config=job.config, hardware=job.hardware)


def test_speedup_is_against_the_paired_baseline_whichever_finishes_first(jobs, make_result):
    speculative, baseline = jobs
    finish(speculative, make_result(speculative.config.key, [150.0, 150.0], outputs=["a", "b"]))
    assert LeaderboardEntry.objects.get(config=speculative.config).speedup is None

    finish(baseline, make_result(baseline.config.key, [50.0, 50.0], outputs=["a", "b"]))

    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert entry.speedup == pytest.approx(3.0)
    assert entry.baseline_entry.config == baseline.config
    assert entry.lossless is True


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
    # Its own baseline's interval reaches the other batch's: the two agree (verdicts.baselines).
    paired = with_baseline_section(
        make_result(speculative.config.key, [150.0, 150.0, 150.0], release="b11434"),
        make_result(baseline.config.key, [30.0, 70.0, 50.0]),
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


@pytest.fixture
def speculative(user, models, hardware, enqueued) -> Job:
    return services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)


def test_the_row_pairs_with_the_baseline_measured_beside_it_not_the_fastest(
    speculative, make_result
):
    separate = submit_baseline(speculative)
    start(separate)
    services.record_result(
        job_id=separate.pk, result=make_result(separate.config.key, [60.0, 60.0])
    )
    start(speculative)
    services.record_result(
        job_id=speculative.pk,
        # Its interval reaches the separate batch's: the two agree (verdicts.baselines).
        result=with_baseline_section(
            make_result(speculative.config.key, [150.0, 150.0]),
            make_result(separate.config.key, [45.0, 55.0]),
        ),
    )

    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert entry.baseline_run.provenance["measured_with_job"] == speculative.pk
    assert entry.speedup == pytest.approx(3.0)


@pytest.fixture
def categories_result(make_protocol_result) -> dict:
    """A DFlash config's categories result with its paired baseline, as a runner file."""
    return categories_result_file(make_protocol_result)


def test_a_categories_row_speedup_is_the_geometric_mean_of_its_categories(
    user, models, hardware, categories_result
):
    services.import_runner_result(
        owner=user, hardware=hardware, result=categories_result, source="test"
    )
    key = categories_config(CATEGORIES).key
    row = LeaderboardEntry.objects.get(config__key=key)
    per_category = [CATEGORY_DECODE[name] / CATEGORY_BASELINE[name] for name in CATEGORIES]
    geometric = math.exp(sum(math.log(s) for s in per_category) / len(per_category))
    pooled = sum(CATEGORY_DECODE.values()) / sum(CATEGORY_BASELINE.values())
    assert abs(geometric - pooled) > 0.03  # the two definitions differ on these figures
    assert row.speedup == pytest.approx(geometric, rel=1e-6)
    # The runner's own definition, recomputed from the file's request records.
    assert derived_speedup(categories_result) == pytest.approx(row.speedup, rel=1e-6)
