"""The submit form's first job, run on the real model by the real llama-server: the quick preset
(the form's default, no drafting) gives output that does not loop, so a first job's row ranks,
where the seed's Fibonacci prompt (the runner's own default) loops on it within 64 tokens."""

from __future__ import annotations

import pytest

from leaderboard.presets import FORM_DEFAULTS
from runner.benchmark import run_benchmark
from runner.config import parse_config
from runner.engines.build import locate
from runner.gguf.real_model import (
    INSTALL_HINT,
    REAL_MODEL_NAME,
    place_real_model,
    real_model_installed,
)
from runner.protocols import QUICK_PROMPT
from runner.stats import is_looping

pytestmark = [
    pytest.mark.engine,
    pytest.mark.skipif(not real_model_installed(), reason=f"needs the real model: {INSTALL_HINT}"),
]


def first_job(tmp_path, protocol: dict) -> dict:
    """A plain run of the real model, as the form's default first job is (no drafting)."""
    place_real_model(tmp_path)
    config = {"target_model": REAL_MODEL_NAME, "protocol": {"name": "quick"} | protocol}
    result = run_benchmark(
        parse_config(config), models_dir=tmp_path, engine=locate(), with_baseline=False
    )
    return result.model_dump(mode="json")


def test_the_quick_preset_does_not_loop_on_the_real_model(tmp_path):
    result = first_job(tmp_path, FORM_DEFAULTS["quick"])

    assert result["summary"]["degenerate"] is False
    assert not any(is_looping(request) for request in result["requests"])
    # Greedy on one engine: every run continues the text the same way.
    assert len({request["output_sha256"] for request in result["requests"]}) == 1


def test_the_seed_prompt_loops_on_the_real_model_within_the_presets_length(tmp_path):
    # Why the form does not start from the runner's default prompt.
    result = first_job(tmp_path, {"prompt": QUICK_PROMPT, "n_predict": 64, "runs": 1, "warmup": 0})
    assert result["summary"]["degenerate"] is True
