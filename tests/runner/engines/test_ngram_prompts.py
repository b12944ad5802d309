"""N-gram configs get a distinct prompt per run, so their caches cannot learn the answer."""

import json
from pathlib import Path

import pytest

from runner.benchmark import run_benchmark
from runner.config import parse_config
from runner.engines.session import open_session
from runner.gguf.inspect import inspect_model
from runner.protocols import RequestSpec, plan_requests, repeated_prompt

EXAMPLE = Path(__file__).parents[3] / "examples" / "ngram.json"
QUICK = {"name": "quick", "runs": 3, "warmup": 1, "n_predict": 64}


def ngram_config(**changes):
    return parse_config(json.loads(EXAMPLE.read_text()) | {"threads": 2} | changes)


def test_each_ngram_run_gets_its_own_token_prompt_reproducible_from_the_seed():
    config = ngram_config()
    plan = plan_requests(config, vocab_size=256)
    assert len(plan) == 1 + 5
    assert all(isinstance(spec.prompt, list) for spec in plan)
    assert len({spec.prompt_sha256 for spec in plan}) == len(plan)
    assert all(spec.input_tokens == len(spec.prompt) for spec in plan)
    assert plan == plan_requests(config, vocab_size=256)
    other_seed = ngram_config(protocol=json.loads(EXAMPLE.read_text())["protocol"] | {"seed": 7})
    assert plan_requests(other_seed, vocab_size=256)[0].prompt != plan[0].prompt


def test_configs_without_an_ngram_type_keep_the_quick_protocols_one_text_prompt():
    config = parse_config({"target_model": "t.gguf", "protocol": QUICK})
    plan = plan_requests(config, vocab_size=256)
    assert {spec.prompt for spec in plan} == {config.protocol.prompt}
    assert repeated_prompt(config, [{"prompt_sha256": spec.prompt_sha256} for spec in plan]) is None


def test_the_ngram_example_keeps_its_config_key():
    # The key from before prompts varied per run: the plan changed, not the config.
    assert ngram_config(threads=None).key == "fe52b75bf8e0b4ba"


def test_an_ngram_result_measured_on_a_repeated_prompt_is_flagged():
    config = ngram_config()
    assert repeated_prompt(config, [{"prompt_sha256": "a"}, {"prompt_sha256": "a"}]) is True
    assert repeated_prompt(config, [{"prompt_sha256": "a"}, {"prompt_sha256": "b"}]) is False
    # An older file that kept no prompt hashes cannot say.
    assert repeated_prompt(config, [{"index": 0}, {"index": 1}]) is None


def test_measured_requests_never_ask_for_token_probabilities():
    # n_probs turns llama-server's GPU-side sampling off: it belongs to the unmeasured pass only.
    for spec in plan_requests(ngram_config(), vocab_size=256):
        assert "n_probs" not in spec.body()


@pytest.mark.engine
def test_each_run_of_the_ngram_example_sends_a_different_prompt_to_the_server(models_dir, engine):
    config = ngram_config()
    result = run_benchmark(config, models_dir=models_dir, engine=engine, with_baseline=True)
    requests = result.requests
    planned = [spec for spec in plan_requests(config, vocab_size=256) if spec.phase == "measure"]
    assert [r.prompt_sha256 for r in requests] == [spec.prompt_sha256 for spec in planned]
    assert len({r.prompt_sha256 for r in requests}) == len(requests) == 5
    # The server read each exact token-id prompt, not the text.
    assert [r.prompt_n for r in requests] == [len(spec.prompt) for spec in planned]
    assert result.summary.repeated_prompt is False
    # The paired baseline ran the same prompts, so its outputs compare request by request.
    assert [r.prompt_sha256 for r in result.baseline.requests] == [
        r.prompt_sha256 for r in requests
    ]
    assert result.summary.lossless is True and result.summary.fidelity.verdict == "identical"


@pytest.mark.engine
def test_ngram_mod_learns_a_repeated_prompts_answer_but_not_the_plans_varied_ones(
    models_dir, engine
):
    config = ngram_config(protocol=QUICK)
    target = inspect_model(models_dir / "tiny-qwen3.gguf")

    def accepted(specs: list[RequestSpec]) -> list[int]:
        session = open_session(
            config, engine=engine, target=target, draft=None,
            request_timeout_s=120, start_timeout_s=120,
        )  # fmt: skip
        session.start()
        try:
            return [session.measure(spec)["draft_n_accepted"] for spec in specs]
        finally:
            session.stop()

    text = RequestSpec("measure", 0, None, 64, config.protocol.prompt, 1234)
    repeated = accepted([text, text, text])
    varied = accepted(plan_requests(config, vocab_size=256))
    # The n-gram pool outlives a request: from the second run on it drafts the answer it saw.
    assert repeated[0] < repeated[1] and repeated[1] > 0.8 * 64
    assert max(varied) < repeated[1]
