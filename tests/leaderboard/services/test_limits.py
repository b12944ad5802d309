"""Whether a user's allowance covers a new submission (services.limits): a job that measures its
paired baseline beside itself is charged for both sections' tokens."""

from __future__ import annotations

import pytest

from leaderboard import services
from leaderboard.services.limits import check_allowance
from runner.config import BenchmarkConfig
from runner.protocols import job_token_budget, token_budget
from tests.support.baselines import DRAFT_SIMPLE

# Synthetic acceptance does not measure its baseline beside itself: it is charged for itself alone.
SELF_DRAFT_SYNTHETIC = DRAFT_SIMPLE | {"n_max": 2, "spec_synth_len": 3.0}


def test_a_job_that_measures_its_baseline_is_charged_for_it(user, settings, db):
    config = BenchmarkConfig.model_validate(DRAFT_SIMPLE)
    synthetic = BenchmarkConfig.model_validate(SELF_DRAFT_SYNTHETIC)

    assert job_token_budget(config) == token_budget(config, with_baseline=True)
    assert job_token_budget(synthetic) == token_budget(synthetic)
    assert job_token_budget(config.baseline()) == token_budget(config.baseline())
    # Just enough for the config alone is not enough for the config and its baseline.
    settings.SPECBOARD_MAX_JOB_TOKENS = token_budget(config)["total_tokens"]
    with pytest.raises(services.LimitReached):
        check_allowance(user=user, config=config)
    check_allowance(user=user, config=synthetic)
