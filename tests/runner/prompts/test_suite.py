"""The project's prompt suites: the current suite's properties (categories, counts, distinct
prompts, no long shared prefix, stated lengths that are true), the first suite kept as it was for
the results measured on it, and the seeded sample a protocol draws."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import httpx
import pytest

from runner.engines.build import locate
from runner.engines.server import LlamaServer, free_port
from runner.gguf.real_model import REAL_MODEL_NAME, place_real_model, real_model_installed
from runner.prompts import (
    CURRENT_SUITE,
    FIRST_SUITE,
    SUITE_FILES,
    load_suite,
    prompts_up_to,
    sample_prompts,
)

# The task categories the issue asks for (at least eleven of them, every one here).
REQUIRED = (
    "code", "math", "reasoning", "writing", "roleplay", "summarisation", "translation",
    "question-answering", "extraction", "stem", "humanities", "long-context", "multi-turn-chat",
)  # fmt: skip
MIN_PROMPTS = 20
# The first suite: its categories and how many prompts each, as results measured on it name them.
FIRST = {
    "code": 6, "math": 6, "summarisation": 5, "translation": 5, "question-answering": 6,
    "extraction": 5, "multi-turn-chat": 5,
}  # fmt: skip


def every_prompt(suite) -> list[str]:
    return [prompt for prompts in suite.categories.values() for prompt in prompts]


def test_the_current_suite_has_every_required_category_with_at_least_twenty_prompts():
    suite = load_suite()
    assert suite.version == CURRENT_SUITE == "2"
    assert suite.names == REQUIRED
    assert {name: len(p) >= MIN_PROMPTS for name, p in suite.categories.items()} == dict.fromkeys(
        REQUIRED, True
    )
    assert suite.fewest_prompts >= MIN_PROMPTS
    assert len(suite.warmup) >= 5


def test_every_prompt_is_distinct_and_no_warm_up_is_measured():
    suite = load_suite()
    prompts = every_prompt(suite)
    assert len(set(prompts)) == len(prompts)
    assert not set(suite.warmup) & set(prompts)
    assert all(p.strip() and "\x00" not in p for p in prompts + list(suite.warmup))


def test_no_two_prompts_share_a_long_prefix_outside_a_labelled_category():
    suite = load_suite()
    limit = suite.max_shared_prefix
    assert limit is not None and limit <= 64
    unlabelled = [
        (category, prompt)
        for category, prompts in suite.categories.items()
        if category not in suite.shared_prefixes
        for prompt in prompts
    ] + [("warm-up", prompt) for prompt in suite.warmup]
    longest = max(
        (len(os.path.commonprefix([a, b])), first, second)
        for (first, a), (second, b) in itertools.combinations(unlabelled, 2)
    )
    assert longest[0] <= limit, longest
    # What the first suite had and this one must not: one prefix of 1,822 characters.
    first = every_prompt(load_suite(FIRST_SUITE))
    assert (
        max(len(os.path.commonprefix([a, b])) for a, b in itertools.combinations(first, 2)) > 1000
    )


def test_every_prompt_states_its_length_in_characters_and_tokens():
    suite = load_suite()
    for prompt in every_prompt(suite) + list(suite.warmup):
        stated = suite.lengths[prompt]
        assert stated.chars == len(prompt)
        assert isinstance(stated.tokens, int) and 1 < stated.tokens <= len(prompt.encode())
    assert suite.tokenizer and REAL_MODEL_NAME in suite.tokenizer


def test_a_prompt_s_tokens_are_at_most_half_its_bytes_and_the_beginning_of_text_token():
    # What the concurrency protocol's suite prompts rely on: a prompt of at most
    # 2 x input_tokens bytes fits input_tokens tokens, plus the slack of its context.
    suite = load_suite()
    for prompt in every_prompt(suite):
        assert suite.lengths[prompt].tokens <= len(prompt.encode()) // 2 + 1, prompt[:60]


def test_a_stated_length_that_is_not_the_text_s_is_refused(tmp_path, monkeypatch):
    from runner import prompts as package

    stored = Path(package.__file__).parent / SUITE_FILES[CURRENT_SUITE]
    text = stored.read_text("utf-8").replace('"chars": ', '"chars": 1', 1)
    (tmp_path / SUITE_FILES[CURRENT_SUITE]).write_text(text, "utf-8")
    monkeypatch.setattr(package.resources, "files", lambda _: tmp_path)
    package.load_suite.cache_clear()
    try:
        with pytest.raises(ValueError, match="a prompt states 1[0-9]+ characters but has"):
            package.load_suite()
    finally:
        monkeypatch.undo()
        package.load_suite.cache_clear()


def test_the_long_context_category_holds_long_prompts_and_the_others_do_not():
    suite = load_suite()
    long_chars = [suite.lengths[p].chars for p in suite.categories["long-context"]]
    others = [
        suite.lengths[p].chars
        for name, prompts in suite.categories.items()
        if name != "long-context"
        for p in prompts
    ]
    assert min(long_chars) > 2500 > max(others)
    assert min(suite.lengths[p].tokens for p in suite.categories["long-context"]) > 600


def test_the_first_suite_is_kept_as_results_measured_on_it_name_it():
    first = load_suite(FIRST_SUITE)
    assert {name: len(p) for name, p in first.categories.items()} == FIRST
    assert all(first.lengths[p].tokens is None for p in every_prompt(first))
    with pytest.raises(ValueError, match="unknown prompt suite '9'"):
        load_suite("9")


# The seeded sample


def test_the_same_seed_gives_the_same_sample_and_another_seed_another():
    suite = load_suite()
    names = ["code", "translation"]
    first = sample_prompts(suite, names, size=5, seed=11)
    assert sample_prompts(suite, names, size=5, seed=11) == first
    assert sample_prompts(suite, names, size=5, seed=12) != first


def test_the_sample_honours_its_size_per_category_in_the_suite_s_order():
    suite = load_suite()
    sample = sample_prompts(suite, ["math", "code"], size=7, seed=3)
    assert [(point, category) for point, category, _ in sample] == [(0, "math")] * 7 + [
        (1, "code")
    ] * 7
    for category in ("math", "code"):
        chosen = [prompt for _, name, prompt in sample if name == category]
        assert len(set(chosen)) == 7
        order = [suite.categories[category].index(prompt) for prompt in chosen]
        assert order == sorted(order)
    with pytest.raises(ValueError, match="has 2[0-9] prompts, not 99"):
        sample_prompts(suite, ["math"], size=99, seed=3)


def test_the_concurrency_pool_is_every_prompt_up_to_a_byte_length():
    suite = load_suite()
    pool = prompts_up_to(suite, 1024)
    assert all(len(p.encode()) <= 1024 for p in pool)
    assert len(pool) == sum(len(p.encode()) <= 1024 for p in every_prompt(suite))
    assert not set(pool) & set(suite.categories["long-context"])
    assert len(pool) >= 200
    assert prompts_up_to(suite, 10) == []


# The stated token counts, on the real model's tokenizer


@pytest.mark.engine
@pytest.mark.skipif(not real_model_installed(), reason="the real-model extra is not installed")
def test_the_stated_token_counts_are_the_real_model_s(tmp_path):
    engine = locate()
    model = place_real_model(tmp_path)
    port = free_port()
    argv = [engine.server_path, "-m", str(model), "--port", str(port), "-c", "512", "-t", "1"]
    if engine.avoids_amx_repack:
        # As the runner starts it there: AMX kernels stop with SIGILL on quantized weights.
        argv.append("--no-repack")
    suite = load_suite()
    with LlamaServer(argv, port=port, library_dir=str(Path(engine.server_path).parent)) as server:
        for prompt in every_prompt(suite) + list(suite.warmup):
            response = httpx.post(
                f"{server.base_url}/tokenize",
                json={"content": prompt, "add_special": True},
                timeout=30,
            )
            assert len(response.json()["tokens"]) == suite.lengths[prompt].tokens, prompt[:60]
