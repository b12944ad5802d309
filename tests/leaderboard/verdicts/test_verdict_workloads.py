"""What a row measured, in words, and which rows share a ranking."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from leaderboard import services
from leaderboard.models import Config, LeaderboardEntry
from leaderboard.verdicts.workloads import (
    TEXT_PROMPT,
    TOKEN_ID_PROMPTS,
    prompt_set,
    ranking_key,
    workload_label,
)
from runner.config import BenchmarkConfig
from runner.protocols import QUICK_PROMPT
from tests.support.baselines import with_baseline_section
from tests.support.measured_configs import measure_config, quick_config
from tests.support.pages import text


def config(protocol: dict, *, variant: str = "v1") -> Config:
    return Config(
        key="k",
        canonical={"protocol": protocol},
        protocol=protocol["name"],
        protocol_variant=variant,
    )


def test_two_quick_configs_on_different_prompts_are_told_apart_by_their_labels():
    one = config({"name": "quick", "n_predict": 64, "prompt": "Write a haiku about the sea."})
    other = config({"name": "quick", "n_predict": 64, "prompt": "a a a a a a a a"}, variant="v2")
    assert workload_label(one) == "quick, 64 out, prompt “Write a haiku about the sea.”"
    assert workload_label(one) != workload_label(other)
    same = {"definition": "decode", "hardware_id": 1, "engine_release": "b11434"}
    assert ranking_key(one, **same) != ranking_key(other, **same)


def test_a_ranking_is_one_definition_one_gpu_and_one_release():
    one = config({"name": "depth", "depths": [512, 4096], "output_tokens": 128})
    assert workload_label(one) == "depth 512–4096 tokens (2 depths), 128 out"
    base = {"definition": "decode", "hardware_id": 1, "engine_release": "b11434"}
    keys = {
        ranking_key(one, **base),
        ranking_key(one, **base | {"definition": "end-to-end"}),
        ranking_key(one, **base | {"hardware_id": 2}),
        ranking_key(one, **base | {"engine_release": "b11500"}),
    }
    assert len(keys) == 4


def test_suite_prompts_and_token_ids_under_load_never_share_a_ranking():
    from leaderboard.services.configs import protocol_variant
    from runner.config import parse_config

    def concurrency(**options) -> Config:
        parsed = parse_config(
            {"target_model": "t.gguf", "protocol": {"name": "concurrency", **options}}
        )
        protocol = parsed.canonical()["protocol"]
        return config(protocol, variant=protocol_variant(protocol))

    ids, suite = concurrency(), concurrency(prompts="suite")
    assert workload_label(ids) == "concurrency 1–16 (5 levels), 512 in, 256 out"
    assert workload_label(suite) == (
        "concurrency 1–16 (5 levels), suite 2 prompts of at most 512 tokens, 256 out"
    )
    same = {"definition": "aggregate", "hardware_id": 1, "engine_release": "b11434"}
    assert ranking_key(ids, **same) != ranking_key(suite, **same)
    # How many rounds or which seed stays out of the workload, the prompt source does not.
    assert ranking_key(concurrency(prompts="suite", rounds=2), **same) == ranking_key(suite, **same)


def test_a_categories_workload_names_its_suite_after_the_first():
    first = config({"name": "categories", "categories": ["code", "math"], "output_tokens": 64,
                    "prompts_per_category": 5})  # fmt: skip
    second = config({"name": "categories", "suite": "2", "categories": ["code", "math"],
                     "output_tokens": 64, "prompts_per_category": 5}, variant="v2")  # fmt: skip
    assert workload_label(first) == "categories code, math (2), 64 out, 5 prompts each"
    assert workload_label(second) == "categories code, math (2), suite 2, 64 out, 5 prompts each"


# The prompts a batch sent (issue 44: n-gram quick rows ran token-id prompts) -------------------


def test_a_batchs_prompts_are_derived_from_its_records_before_its_plan():
    prompt = "Write a haiku about the sea."
    text_hash = hashlib.sha256(json.dumps(prompt).encode()).hexdigest()
    sent = [{"phase": "measure", "prompt_sha256": text_hash, "input_tokens": None}] * 3
    # The protocol's text in every record: text, whatever the plan says.
    assert prompt_set("quick", prompt, sent, planned_token_ids=True) == TEXT_PROMPT
    other = [{"phase": "measure", "prompt_sha256": f"{i:064x}"} for i in range(3)]
    assert prompt_set("quick", prompt, other, planned_token_ids=False) == TOKEN_ID_PROMPTS
    # Without hashes, a record's exact prompt length is a token-id prompt's.
    lengths = [{"phase": "measure", "input_tokens": 7}]
    assert prompt_set("quick", prompt, lengths, planned_token_ids=False) == TOKEN_ID_PROMPTS
    # Without either, the plan of the invocation that measured it.
    bare = [{"phase": "measure", "input_tokens": None}]
    assert prompt_set("quick", prompt, bare, planned_token_ids=True) == TOKEN_ID_PROMPTS
    assert prompt_set("quick", prompt, bare, planned_token_ids=False) == TEXT_PROMPT
    # Other protocols say in their parameters which prompts they send.
    assert prompt_set("depth", prompt, other, planned_token_ids=True) == ""


def test_token_id_prompts_are_a_workload_of_their_own_with_their_own_words():
    quick = config({"name": "quick", "n_predict": 64, "prompt": "Write a haiku about the sea."})
    same = {"definition": "decode", "hardware_id": 1, "engine_release": "b11434"}
    assert ranking_key(quick, **same, prompt_set=TOKEN_ID_PROMPTS) != ranking_key(quick, **same)
    # A text prompt's ranking keeps the key it had before prompts were part of it.
    assert ranking_key(quick, **same, prompt_set=TEXT_PROMPT) == ranking_key(quick, **same)
    words = workload_label(quick, prompt_set=TOKEN_ID_PROMPTS)
    assert words == "quick, 64 out, distinct token-id prompts of 7 tokens"


def test_ngram_and_draft_model_quick_rows_never_share_a_ranking_or_a_baseline_row(
    client, user, ranked_models, hardware, enqueued, make_result
):
    # One quick protocol, two configs: the n-gram one's runner sends token-id prompts (and its
    # paired baseline the same), the draft-model one the protocol's text. Their baseline is
    # one config, measured here on each.
    ngram = measure_config(
        user,
        hardware,
        make_result,
        quick_config("ngram-simple", 4),
        [90.0, 91.0, 89.0],
        baseline=(30.0, 31.0, 29.0),
    ).config
    draft = measure_config(
        user,
        hardware,
        make_result,
        quick_config("draft-simple", 4),
        [90.0, 91.0, 89.0],
        baseline=(60.0, 61.0, 59.0),
    ).config
    assert ngram.baseline_id == draft.baseline_id
    ngram_row = LeaderboardEntry.objects.get(config=ngram)
    draft_row = LeaderboardEntry.objects.get(config=draft)
    assert ngram_row.ranking_key != draft_row.ranking_key
    assert "distinct token-id prompts" in ngram_row.ranking_label
    assert "prompt “" not in ngram_row.ranking_label
    assert "prompt “" in draft_row.ranking_label
    # The baseline has a row in each, each of its own batches: never the two prompt kinds mixed.
    baselines = {
        row.prompt_set: row for row in LeaderboardEntry.objects.filter(config=ngram.baseline)
    }
    assert set(baselines) == {TEXT_PROMPT, TOKEN_ID_PROMPTS}
    assert baselines[TOKEN_ID_PROMPTS].tokens_per_second == 30.0
    assert baselines[TEXT_PROMPT].tokens_per_second == 60.0
    assert baselines[TOKEN_ID_PROMPTS].ranking_key == ngram_row.ranking_key
    # Each speedup over the baseline batch of its own prompts: 3x and 1.5x.
    assert ngram_row.baseline_entry == baselines[TOKEN_ID_PROMPTS]
    assert ngram_row.speedup == pytest.approx(90.0 / 30.0)
    assert draft_row.speedup == pytest.approx(90.0 / 60.0)
    # The board shows two rankings, each heading naming what its rows sent.
    board = text(client.get("/"))
    assert ngram_row.ranking_label in board and draft_row.ranking_label in board


def ngram_measured(user, hardware, make_result, *, prompt_hashes: str | None) -> Config:
    """An n-gram quick config at 90 tok/s over its baseline's 30, both sides' requests naming
    `prompt_hashes` as every request's prompt (None: no prompt hashes, as older files)."""
    job = services.submit_config(
        owner=user, data=quick_config("ngram-simple", 4), hardware_slug=hardware.slug
    )
    result = with_baseline_section(
        make_result(job.config.key, [90.0, 91.0, 89.0], draft=(40, 30), tau=2.2),
        make_result(job.config.baseline.key, [30.0, 31.0, 29.0]),
    )
    if prompt_hashes:
        for record in result["requests"] + result["baseline"]["requests"]:
            record["prompt_sha256"] = prompt_hashes
    services.record_result(job_id=job.pk, result=result)
    return job.config


def answers(client) -> tuple[str, str]:
    """The front page's first answer and /best/'s answer, as a person reads them."""
    front = text(client.get("/"))
    best = text(client.get("/best/", {"target": "tiny-qwen3", "memory_gb": "10"}))
    glance = re.search(r'<li class="glance-answer">(.*?)</li>', front, re.S)
    answer = re.search(r'<p class="answer" id="best-answer">(.*?)</p>', best, re.S)
    assert glance and answer
    return glance.group(1), answer.group(1)


def test_a_row_measured_on_a_repeated_prompt_is_labelled_on_every_answer_that_names_it(
    client, user, ranked_models, hardware, enqueued, make_result
):
    # The old runner's n-gram plan: the protocol's text prompt sent by every request.
    repeated = hashlib.sha256(json.dumps(QUICK_PROMPT).encode()).hexdigest()
    config = ngram_measured(user, hardware, make_result, prompt_hashes=repeated)
    row = LeaderboardEntry.objects.get(config=config)
    assert row.memorised and row.prompt_set == TEXT_PROMPT
    glance, best = answers(client)
    assert config.key in glance and "repeated prompt" in glance
    assert config.key in best and "repeated prompt" in best


def test_a_row_whose_prompts_are_unknown_never_counts_as_measured_on_distinct_prompts(
    client, user, ranked_models, hardware, enqueued, make_result
):
    config = ngram_measured(user, hardware, make_result, prompt_hashes=None)
    row = LeaderboardEntry.objects.get(config=config)
    assert row.prompts_unknown and not row.memorised
    glance, best = answers(client)
    assert config.key in glance and "prompts unknown" in glance
    assert config.key in best and "prompts unknown" in best
    api = client.get("/api/v1/leaderboard").json()
    (listed,) = [r for r in api["results"] if r["config_key"] == config.key]
    assert listed["prompts_unknown"] is True and listed["prompt_set"] == TOKEN_ID_PROMPTS


def test_an_imported_ngram_files_baseline_section_ran_its_token_id_plan(
    user, ranked_models, hardware, make_result
):
    # A file without prompt hashes: its baseline section ran the n-gram config's plan, which the
    # site derives from the config whose file brought it.
    config = BenchmarkConfig.model_validate(quick_config("ngram-simple", 4))
    result = with_baseline_section(
        make_result(config, [90.0, 91.0, 89.0], draft=(40, 30), tau=2.2),
        make_result(config.baseline(), [30.0, 31.0, 29.0]),
    )
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    row = LeaderboardEntry.objects.get(config__key=config.key)
    (baseline,) = LeaderboardEntry.objects.filter(config__key=config.baseline().key)
    assert row.prompt_set == baseline.prompt_set == TOKEN_ID_PROMPTS
    assert row.baseline_entry == baseline and row.speedup == pytest.approx(3.0)
