"""Leaderboard rows: each config's best average over its runs, and speedup against its baseline
(a categories row's: the geometric mean of its categories' speedups, the runner's definition)."""

from __future__ import annotations

import math

import pytest

from leaderboard import selectors, services
from leaderboard.models import Job, LeaderboardEntry
from runner.evidence import derived_speedup
from tests.support.baselines import DRAFT_SIMPLE, finish, submit_baseline
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
    speculative = services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)
    return speculative, submit_baseline(speculative)


def test_the_entry_shows_the_best_average_over_runs(jobs, user, hardware, make_result):
    speculative, _ = jobs
    again = services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)
    finish(
        speculative,
        make_result(speculative.config.key, [90.0, 100.0, 110.0], draft=(120, 60), tau=2.5),
    )
    finish(again, make_result(again.config.key, [130.0, 140.0, 150.0], draft=(300, 60), tau=1.8))

    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert entry.runs_count == 2
    assert entry.tokens_per_second == pytest.approx(140.0)
    assert entry.tps_definition == "decode"
    assert entry.n == 3 and entry.ci95_low < 140.0 < entry.ci95_high
    assert entry.acceptance_rate == pytest.approx(0.2) and entry.tau == pytest.approx(1.8)
    assert entry.best_run == again.run


def test_speedup_is_against_the_paired_baseline_whichever_finishes_first(jobs, make_result):
    speculative, baseline = jobs
    finish(speculative, make_result(speculative.config.key, [150.0, 150.0], outputs=["a", "b"]))
    assert LeaderboardEntry.objects.get(config=speculative.config).speedup is None

    finish(baseline, make_result(baseline.config.key, [50.0, 50.0], outputs=["a", "b"]))

    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert entry.speedup == pytest.approx(3.0)
    assert entry.baseline_entry.config == baseline.config
    assert entry.lossless is True


def test_output_that_differs_from_the_baseline_is_not_lossless(jobs, make_result):
    speculative, baseline = jobs
    finish(baseline, make_result(baseline.config.key, [50.0, 50.0], outputs=["a", "b"]))
    finish(speculative, make_result(speculative.config.key, [100.0, 100.0], outputs=["a", "c"]))

    assert LeaderboardEntry.objects.get(config=speculative.config).lossless is False


def test_a_baseline_result_means_later_synthetic_submissions_schedule_no_baseline(
    jobs, user, hardware, make_result
):
    _, baseline = jobs
    finish(baseline, make_result(baseline.config.key, [50.0]))

    later = services.submit_config(
        owner=user, data=DRAFT_SIMPLE | {"spec_synth_len": 3.0}, hardware_slug=hardware.slug
    )

    assert later.config.baseline == baseline.config
    assert not Job.objects.filter(auto_scheduled=True).exists()


def test_leaderboard_filters_and_sorting(jobs, make_result):
    speculative, baseline = jobs
    finish(baseline, make_result(baseline.config.key, [50.0]))
    finish(speculative, make_result(speculative.config.key, [100.0], draft=(10, 5)))

    by_speed = list(selectors.leaderboard_entries())
    assert [e.config for e in by_speed] == [speculative.config, baseline.config]
    assert [e.config for e in selectors.leaderboard_entries(spec_type="none")] == [baseline.config]
    assert [e.config for e in selectors.leaderboard_entries(spec_type="draft-simple")] == [
        speculative.config
    ]
    assert list(selectors.leaderboard_entries(spec_type="draft-dflash")) == []
    # An exact match on the stored types: no prefix or substring of a type matches.
    assert list(selectors.leaderboard_entries(spec_type="draft")) == []
    assert list(selectors.leaderboard_entries(spec_type="simple")) == []
    by_acceptance = list(selectors.leaderboard_entries(ordering="acceptance_rate"))
    assert by_acceptance[0].config == speculative.config
    assert list(selectors.leaderboard_entries(source="self-reported")) == []


def test_retiring_an_engine_build_takes_its_rows_off_the_board(jobs, make_result):
    speculative, _ = jobs
    finish(speculative, make_result(speculative.config.key, [100.0]))

    assert services.retire_engine_build(release="b11434") == 1
    assert list(selectors.leaderboard_entries()) == []
    assert len(selectors.leaderboard_entries(include_retired=True)) == 1


# A categories row -----------------------------------------------------------------------------


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
