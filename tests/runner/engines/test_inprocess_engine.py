"""The second engine: llama-cpp-python in process, measured by the same protocols."""

import pytest
from pydantic import ValidationError

from runner.benchmark import run_benchmark
from runner.config import BenchmarkConfig, field_errors, parse_config
from runner.protocols import RequestSpec
from runner.results import load_result


@pytest.fixture(scope="module")
def llama_cpp():
    return pytest.importorskip("llama_cpp", reason="run `python -m runner engine --inprocess`")


QUICK = {"name": "quick", "runs": 3, "warmup": 1, "n_predict": 48}


def test_in_process_baseline_fills_the_same_result_schema(llama_cpp, models_dir):
    config = parse_config(
        {"engine": "llama-cpp-python", "target_model": "tiny-qwen3.gguf", "threads": 2,
         "protocol": QUICK}
    )  # fmt: skip
    result = run_benchmark(config, models_dir=models_dir).model_dump(mode="json")
    decode = result["summary"]["decode_tokens_per_second"]
    assert decode["n"] == 3 and decode["mean"] > 0
    assert all(r["predicted_n"] == 48 for r in result["requests"])
    assert result["engine"]["release"].startswith("llama-cpp-python-")
    assert result["provenance"]["command"].startswith("python: llama_cpp.Llama")
    # Greedy decoding in process is deterministic too.
    assert len({r["output_sha256"] for r in result["requests"]}) == 1
    assert all(r["ttft_source"] == "in process" for r in result["requests"])
    assert load_result(result).model_dump(mode="json") == result


def test_prompt_lookup_drafts_are_accepted_on_repeating_output(llama_cpp, tiny_models):
    from runner.engines.llama_cpp_python import InProcessSession
    from runner.gguf.inspect import inspect_model

    config = parse_config(
        {"engine": "llama-cpp-python", "target_model": "tiny-mtp.gguf", "threads": 2,
         "spec_types": "prompt-lookup", "n_max": 8}
    )  # fmt: skip
    session = InProcessSession(config, target=inspect_model(tiny_models["tiny-mtp.gguf"]))
    session.start()
    try:
        # The MTP fixture always continues with the next token id, which the prompt already holds.
        prompt = list(range(256)) + list(range(32))
        record = session.measure(RequestSpec("measure", 0, None, 128, prompt, 1))
    finally:
        session.stop()
    assert record["predicted_n"] == 128
    assert record["draft_n"] > 0 and record["draft_n_accepted"] > 0
    assert record["tau"] > 2.0


@pytest.mark.parametrize(
    "extra, field",
    [
        ({"draft_model": "d.gguf", "spec_types": "draft-dflash"}, "spec_types"),
        ({"spec_types": "ngram-mod"}, "spec_types"),
        ({"spec_types": "prompt-lookup", "spec_synth_len": 2.0}, "spec_synth_len"),
    ],
)
def test_configs_the_binding_cannot_run_get_a_clear_error(extra, field):
    with pytest.raises(ValidationError) as caught:
        BenchmarkConfig.model_validate(
            {"engine": "llama-cpp-python", "target_model": "t.gguf", **extra}
        )
    errors = field_errors(caught.value)
    assert field in errors, errors


def test_prompt_lookup_is_refused_for_llama_server():
    with pytest.raises(ValidationError) as caught:
        BenchmarkConfig.model_validate({"target_model": "t.gguf", "spec_types": "prompt-lookup"})
    assert "llama-cpp-python" in field_errors(caught.value)["spec_types"][0]
