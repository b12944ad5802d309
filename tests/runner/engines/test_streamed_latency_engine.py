"""Latency measured on a real llama-server (CPU, the tiny fixtures): a streamed run records when
each content chunk arrived, and its summary and points carry the TTFT, TPOT, inter-token and
end-to-end percentiles those requests give, which the result model checks again at the door; a
whole response records no chunks and no inter-token latency. Kept short: two cores are shared."""

from __future__ import annotations

import pytest

from runner.benchmark import run_benchmark
from runner.config import parse_config
from runner.gguf.real_model import (
    INSTALL_HINT,
    REAL_MODEL_NAME,
    place_real_model,
    real_model_installed,
)
from runner.results import load_result
from runner.stats import inter_token_gaps_ms, latency_figures, request_tpot_ms

pytestmark = pytest.mark.engine

QUICK = {"name": "quick", "runs": 2, "warmup": 1, "n_predict": 24}
SELF_DRAFT = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-qwen3.gguf",
    "spec_types": "draft-simple",
    "n_max": 4,
    "threads": 2,
}


def measured(data: dict) -> list[dict]:
    return [r for r in data["requests"] if r["phase"] == "measure"]


def test_a_streamed_speculative_run_records_chunk_arrivals_and_its_latency_percentiles(
    models_dir, engine
):
    config = parse_config(SELF_DRAFT | {"stream": True, "protocol": QUICK})
    data = run_benchmark(config, models_dir=models_dir, engine=engine).model_dump(mode="json")
    records = measured(data)
    for record in records:
        arrivals = record["chunk_arrival_ms"]
        assert arrivals and len(arrivals) <= record["predicted_n"]
        assert arrivals == sorted(arrivals) and arrivals[-1] <= record["wall_ms"]
        assert record["ttft_ms"] == arrivals[0] and record["ttft_source"] == "client stream"
        assert record["tpot_ms"] == pytest.approx(request_tpot_ms(record))
    latency = data["summary"]["latency"]
    assert latency["itl_ms"]["n"] == sum(len(inter_token_gaps_ms(r)) for r in records) > 0
    for name in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
        figures = latency[name]
        assert 0 <= figures["p50"] <= figures["p90"] <= figures["p99"] <= figures["max"]
    assert latency == latency_figures(records)
    assert data["points"][0]["latency"] == latency  # one point holds every request
    assert latency["goodput"]["requests"] == len(records)
    # The file the runner writes loads again: its latency agrees with its requests.
    assert load_result(data).summary.latency is not None


def test_a_whole_response_records_no_chunks_and_no_inter_token_latency(models_dir, engine):
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "threads": 2, "protocol": QUICK | {"runs": 1}}
    )
    data = run_benchmark(config, models_dir=models_dir, engine=engine).model_dump(mode="json")
    (record,) = measured(data)
    assert record["chunk_arrival_ms"] is None and record["tpot_ms"] is not None
    assert data["summary"]["latency"]["itl_ms"]["n"] == 0
    assert data["summary"]["latency"]["tpot_ms"]["n"] == 1


def test_a_streamed_concurrency_run_gives_each_level_its_own_latency(models_dir, engine):
    protocol = {
        "name": "concurrency",
        "levels": [1, 2],
        "input_tokens": 16,
        "output_tokens": 12,
        "rounds": 1,
        "warmup": 0,
    }
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "threads": 2, "stream": True, "protocol": protocol}
    )
    data = run_benchmark(config, models_dir=models_dir, engine=engine).model_dump(mode="json")
    for point, level in zip(data["points"], [1, 2], strict=True):
        mine = [r for r in measured(data) if r["concurrency"] == level]
        assert point["latency"]["ttft_ms"]["n"] == level == len(mine)
        assert point["latency"]["itl_ms"]["n"] == sum(len(r["chunk_arrival_ms"]) - 1 for r in mine)


@pytest.mark.skipif(not real_model_installed(), reason=f"no real model ({INSTALL_HINT})")
def test_on_the_real_model_a_speculative_stream_arrives_in_bursts_its_baseline_token_by_token(
    tmp_path, engine
):
    """Gemma 3 270M drafting for itself, streamed, with its streamed baseline in the same run:
    each verify step's accepted tokens arrive together, so inter-token gaps near 0 are common on
    the speculative side and absent on the baseline's, whose every token is its own step."""
    place_real_model(tmp_path)
    config = parse_config(
        {"target_model": REAL_MODEL_NAME, "draft_model": REAL_MODEL_NAME}
        | {"spec_types": "draft-simple", "n_max": 4, "threads": 1, "stream": True}
        | {"protocol": {"name": "quick", "runs": 2, "warmup": 0, "n_predict": 32}}
    )
    result = run_benchmark(config, models_dir=tmp_path, engine=engine, with_baseline=True)
    data = result.model_dump(mode="json")

    def near_zero_share(section: dict) -> float:
        gaps = [g for r in measured(section) for g in inter_token_gaps_ms(r)]
        assert gaps and section["summary"]["latency"]["itl_ms"]["n"] == len(gaps)
        return sum(g < 1.0 for g in gaps) / len(gaps)

    for section in (data, data["baseline"]):
        latency = section["summary"]["latency"]
        assert latency == latency_figures(measured(section))
        assert all(r["ttft_source"] == "client stream" for r in measured(section))
    assert data["summary"]["tau"] > 1.5  # the model's own drafts are mostly accepted
    assert near_zero_share(data) > 0.2 > near_zero_share(data["baseline"])
    assert load_result(data).baseline is not None
