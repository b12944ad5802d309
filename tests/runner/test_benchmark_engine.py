"""The runner against a real llama-server on the tiny fixtures (CPU)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from runner.benchmark import run_benchmark
from runner.config import parse_config
from runner.errors import EngineCrashedError, ModelCheckError
from runner.results import BenchmarkResult, load_result
from tests.support.legacy_fields import without_legacy_fields

pytestmark = pytest.mark.engine

QUICK = {"name": "quick", "runs": 3, "warmup": 1, "n_predict": 48}


def benchmark(models_dir, engine, *, with_baseline=False, **config) -> dict:
    """Run a config and return its result as the plain JSON data the service reads."""
    data = {"target_model": "tiny-qwen3.gguf", "protocol": QUICK, "threads": 2, **config}
    result = run_benchmark(
        parse_config(data), models_dir=models_dir, engine=engine, with_baseline=with_baseline
    )
    assert isinstance(result, BenchmarkResult)
    return result.model_dump(mode="json")


def test_a_paired_result_is_a_validated_model_that_dumps_and_loads_unchanged(models_dir, engine):
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "draft_model": "tiny-qwen3.gguf",
         "spec_types": "draft-simple", "n_max": 4, "protocol": QUICK, "threads": 2}
    )  # fmt: skip
    result = run_benchmark(config, models_dir=models_dir, engine=engine, with_baseline=True)
    assert result.config.key == result.config_key == config.key
    assert result.baseline is not None and result.baseline.config_key == config.baseline().key
    assert result.summary.speedup is not None and result.summary.lossless is True
    assert result.provenance.system.hostname
    dumped = result.model_dump(mode="json")
    assert load_result(dumped) == result
    assert load_result(result.model_dump_json()) == result
    # The runner sets every field of its result but those only older files carry.
    assert result.model_dump(mode="json", exclude_unset=True) == without_legacy_fields(dumped)


def test_a_paired_run_interleaves_its_baseline_in_abba_rounds_and_records_them(models_dir, engine):
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "draft_model": "tiny-qwen3.gguf",
         "spec_types": "draft-simple", "n_max": 4, "threads": 2, "protocol": QUICK | {"runs": 4}}
    )  # fmt: skip
    events: list[dict] = []
    result = run_benchmark(
        config, models_dir=models_dir, engine=engine, with_baseline=True, progress=events.append
    )
    rounds = result.provenance.paired_rounds
    assert [(r.round, r.order, r.request_indices) for r in rounds] == [
        (0, ["baseline", "speculative"], [0, 1]),
        (1, ["speculative", "baseline"], [2, 3]),
    ]
    # The baseline's engine ran before and after the speculative one (its turns of the two
    # rounds meet, so they share one engine), loaded twice, and every request was counted.
    measuring = [e["phase"] for e in events if e["phase"] in ("baseline", "measuring")]
    assert [phase for i, phase in enumerate(measuring) if measuring[i - 1 : i] != [phase]] == [
        "baseline", "measuring", "baseline",
    ]  # fmt: skip
    assert events[-1]["done"] == events[-1]["total"] == result.provenance.token_budget.requests
    # One engine load a session, each followed by its side's requests: the baseline's engine
    # was loaded twice, the speculative one's once. (Counted from the events, not by comparing
    # load times: two small loads against one on a shared CPU come out in either order.)
    sides = ("baseline", "measuring")
    loaded = [
        next(later["phase"] for later in events[i + 1 :] if later["phase"] in sides)
        for i, event in enumerate(events)
        if event["phase"] == "loading"
    ]
    assert loaded == ["baseline", "measuring", "baseline"]
    assert result.baseline.summary.load_seconds > 0 and result.summary.load_seconds > 0
    assert len(result.baseline.requests) == len(result.requests) == 4
    # The model drafting for itself: the same greedy tokens on both sides, round by round.
    assert result.summary.lossless is True


def test_baseline_measures_decode_speed_from_server_timings(models_dir, engine):
    result = benchmark(models_dir, engine)
    decode = result["summary"]["decode_tokens_per_second"]
    assert decode["n"] == 3 and decode["ci95_low"] <= decode["mean"] <= decode["ci95_high"]
    for record in result["requests"]:
        assert record["predicted_n"] == 48
        # The 47 tokens after the first over the generation time that holds their 47 steps
        # (runner.stats.decode_rate, llama-bench's tg convention), not 48 over it.
        assert record["decode_tokens_per_second"] == pytest.approx(
            (48 - 1) / (record["predicted_ms"] / 1000)
        )
        assert record["draft_n"] == 0 and record["tau"] is None
        assert record["ttft_ms"] > 0 and record["end_to_end_tokens_per_second"] > 0
    assert result["summary"]["speedup"] is None and result["summary"]["lossless"] is None
    assert result["summary"]["peak_memory_bytes"] > 0
    provenance = result["provenance"]
    assert provenance["argv"][0] == engine.server_path
    assert provenance["models"]["target"]["architecture"] == "qwen3"
    assert len(provenance["models"]["target"]["sha256"]) == 64
    assert result["engine"]["release"] == "b11434"
    # Greedy decoding of the same prompt gives the same tokens every time.
    assert len({r["output_sha256"] for r in result["requests"]}) == 1


def test_dflash_drafts_with_random_weights_accept_nothing(models_dir, engine):
    result = benchmark(
        models_dir,
        engine,
        draft_model="tiny-dflash.gguf",
        spec_types="draft-dflash",
        n_max=15,
    )
    summary = result["summary"]
    assert summary["draft_tokens"] > 0
    assert summary["draft_accepted"] == 0 and summary["acceptance_rate"] == 0.0
    assert summary["tau"] == pytest.approx(1.0)
    assert not result["synthetic"]


def test_dflash_with_synthetic_acceptance_reaches_tau_near_seven_and_is_marked(models_dir, engine):
    result = benchmark(
        models_dir,
        engine,
        with_baseline=True,
        draft_model="tiny-dflash.gguf",
        spec_types="draft-dflash",
        n_max=15,
        spec_synth_len=6,
        protocol={**QUICK, "n_predict": 160},
    )
    summary = result["summary"]
    assert result["synthetic"] is True
    assert 5.0 < summary["tau"] < 8.5
    assert summary["lossless"] is None and "synthetic" in summary["lossless_note"]
    assert summary["speedup"] is not None


def test_self_draft_accepts_every_draft_and_is_lossless(models_dir, engine):
    result = benchmark(
        models_dir,
        engine,
        with_baseline=True,
        draft_model="tiny-qwen3.gguf",
        spec_types="draft-simple",
        n_max=4,
    )
    summary = result["summary"]
    assert summary["draft_tokens"] > 0
    assert summary["draft_accepted"] == summary["draft_tokens"]
    assert summary["acceptance_rate"] == 1.0
    assert summary["lossless"] is True
    assert all(r["first_divergence"] is None for r in result["requests"])
    assert summary["speedup"] > 0
    assert summary["baseline_decode_tokens_per_second"] > 0
    assert result["baseline"]["config"]["spec_types"] == []
    assert summary["acceptance_by_position"][0] == pytest.approx(1.0)


def test_ngram_mod_drafts_from_repeated_output(models_dir, engine):
    result = benchmark(
        models_dir, engine, spec_types="ngram-mod", protocol={**QUICK, "n_predict": 200}
    )
    assert result["summary"]["draft_accepted"] > 0


def test_mtp_head_drafts_are_accepted_and_lossless(models_dir, engine):
    result = benchmark(
        models_dir,
        engine,
        with_baseline=True,
        target_model="tiny-mtp.gguf",
        spec_types="draft-mtp",
        n_max=3,
    )
    summary = result["summary"]
    assert summary["draft_tokens"] > 0
    assert summary["draft_accepted"] == summary["draft_tokens"]
    assert summary["lossless"] is True
    assert summary["tau"] > 2.0


def test_depth_protocol_uses_exact_input_lengths(models_dir, engine):
    result = benchmark(
        models_dir,
        engine,
        protocol={"name": "depth", "depths": [32, 200], "output_tokens": 16, "requests": 2},
    )
    assert [r["prompt_n"] for r in result["requests"]] == [32, 32, 200, 200]
    assert [p["input_tokens"] for p in result["points"]] == [32, 200]


def test_premerge_dflash_draft_is_refused_before_anything_starts(models_dir, engine):
    with pytest.raises(ModelCheckError, match="pre-merge"):
        benchmark(
            models_dir,
            engine,
            draft_model="tiny-dflash-draft-premerge.gguf",
            spec_types="draft-dflash",
        )


def test_dflash_draft_of_another_width_is_refused(models_dir, engine):
    with pytest.raises(ModelCheckError, match="n_embd"):
        benchmark(
            models_dir, engine, draft_model="tiny-dflash-wide.gguf", spec_types="draft-dflash"
        )


def test_missing_model_file_is_a_clear_error(models_dir, engine):
    with pytest.raises(ModelCheckError, match="not found"):
        benchmark(models_dir, engine, target_model="nope.gguf")


def test_context_above_the_training_context_is_refused(models_dir, engine, tiny_models):
    with pytest.raises(ModelCheckError, match="training context"):
        benchmark(models_dir, engine, ctx_size=200_000)


def test_a_server_killed_mid_request_fails_fast_with_its_log_tail(models_dir, engine):
    def kill_server_soon():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = subprocess.run(
                ["pgrep", "-f", f"{engine.server_path} -m {models_dir}"],
                capture_output=True,
                text=True,
            ).stdout.split()
            if found:
                time.sleep(0.5)
                for pid in found:
                    os.kill(int(pid), signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_server_soon)
    killer.start()
    started = time.monotonic()
    with pytest.raises(EngineCrashedError) as caught:
        benchmark(models_dir, engine, protocol={**QUICK, "runs": 50, "n_predict": 2000})
    killer.join()
    assert str(caught.value).startswith("engine crashed")
    assert caught.value.log_tail
    assert time.monotonic() - started < 60


def test_cli_runs_an_example_config_and_writes_the_result(models_dir, engine, tmp_path):
    out = tmp_path / "result.json"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "runner",
            "run",
            "examples/self-draft.json",
            "--baseline",
            "--models",
            str(models_dir),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(out.read_text())
    assert load_result(out.read_bytes()).model_dump(mode="json") == result
    assert result["summary"]["lossless"] is True
    assert {"decode_tokens_per_second", "acceptance_rate", "tau", "speedup"} <= set(
        result["summary"]
    )
    assert "requests" in completed.stderr and "decode tok/s" in completed.stderr


def test_streaming_and_whole_responses_give_the_same_greedy_tokens(models_dir, engine):
    streamed = benchmark(models_dir, engine, stream=True)
    whole = benchmark(models_dir, engine)
    assert {r["output_sha256"] for r in whole["requests"]} == {
        r["output_sha256"] for r in streamed["requests"]
    }
    assert all(r["ttft_source"] == "server prompt time" for r in whole["requests"])
    assert all(r["ttft_source"] == "client stream" for r in streamed["requests"])
    assert whole["config_key"] != streamed["config_key"]


def test_gpu_side_sampling_gives_the_same_greedy_tokens_as_host_sampling(models_dir, engine):
    on_gpu = benchmark(models_dir, engine)
    on_host = benchmark(models_dir, engine, backend_sampling=False)
    assert on_gpu["config"]["backend_sampling"] is True  # the default for llama-server
    assert "-bs" in on_gpu["provenance"]["argv"] and "-bs" not in on_host["provenance"]["argv"]
    assert [r["output_sha256"] for r in on_gpu["requests"]] == [
        r["output_sha256"] for r in on_host["requests"]
    ]


def test_progress_events_carry_the_running_engines_recent_log(models_dir, engine):
    events = []
    run_benchmark(
        parse_config({"target_model": "tiny-qwen3.gguf", "protocol": QUICK, "threads": 2}),
        models_dir=models_dir,
        engine=engine,
        progress=events.append,
    )
    logged = [event["log_tail"] for event in events if event.get("log_tail")]
    assert logged, events
    # The tail is llama-server's own output, and it grows as requests are served.
    assert "llama" in logged[-1].lower() or "slot" in logged[-1].lower()
    assert len(logged[-1]) <= 2000


def test_llama_bench_cross_checks_token_generation_at_each_depth(models_dir, engine):
    from dataclasses import replace

    from runner.engines.build import llama_bench
    from runner.errors import EngineBuildError

    rows = llama_bench(
        engine, models_dir / "tiny-qwen3.gguf", depths=[0, 64], tokens=16, reps=2, threads=2
    )
    assert [row["n_depth"] for row in rows] == [0, 64]
    assert all(row["n_gen"] == 16 and row["avg_ts"] > 0 for row in rows)
    with pytest.raises(EngineBuildError, match="no llama-bench"):
        llama_bench(replace(engine, bench_path=None), models_dir / "tiny-qwen3.gguf",
                    depths=[0], tokens=4, reps=1)  # fmt: skip
