"""Unit tests of the pure parts: statistics, protocols, /metrics parsing, argv."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from runner.config import parse_config
from runner.engine import Engine, build_dir_for, build_flags
from runner.measure import distinct_ngram_ratio, parse_metrics
from runner.protocols import plan_requests, token_budget
from runner.server import server_argv
from runner.stats import summarize, t_critical_95

METRICS = """# HELP llamacpp:spec_decode_num_draft_tokens_total Speculative: Total draft tokens generated
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total 150
llamacpp:spec_decode_num_accepted_tokens_total 60
llamacpp:spec_decode_num_drafts_total 10
llamacpp:predicted_tokens_seconds 12.5
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 9
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 7
"""


def test_summary_has_a_student_t_confidence_interval():
    summary = summarize([10.0, 12.0, 11.0, 13.0, 9.0])
    assert summary["n"] == 5 and summary["mean"] == pytest.approx(11.0)
    half = 2.776 * math.sqrt(2.5) / math.sqrt(5)
    assert summary["ci95_low"] == pytest.approx(11.0 - half)
    assert summary["ci95_high"] == pytest.approx(11.0 + half)


def test_t_critical_values_approach_the_normal_value():
    assert t_critical_95(1) == pytest.approx(12.706)
    assert 1.96 < t_critical_95(1000) < t_critical_95(100) < t_critical_95(30)


def test_summary_of_one_value_has_a_zero_width_interval_and_none_has_nones():
    assert summarize([5.0])["ci95_low"] == 5.0
    assert summarize([])["mean"] is None


def test_metrics_are_parsed_with_per_position_counters():
    counters = parse_metrics(METRICS)
    assert (counters.draft_tokens, counters.accepted_tokens, counters.verify_steps) == (150, 60, 10)
    assert counters.accepted_per_position == {0: 9, 1: 7}
    delta = counters.minus(parse_metrics(METRICS.replace(" 150", " 100")))
    assert delta.draft_tokens == 50 and delta.accepted_tokens == 0


def test_sweep_prompts_have_exact_lengths_and_are_reproducible():
    config = parse_config(
        {
            "target_model": "t.gguf",
            "protocol": {"name": "depth", "depths": [64, 128], "output_tokens": 8, "requests": 2},
        }
    )
    plan = plan_requests(config, vocab_size=256)
    assert [len(r.prompt) for r in plan] == [64, 64, 64, 128, 128, 128]
    assert [r.phase for r in plan[:3]] == ["warmup", "measure", "measure"]
    assert plan == plan_requests(config, vocab_size=256)
    assert all(64 <= token < 255 for r in plan for token in r.prompt)


def test_token_budget_counts_warmups_and_doubles_with_the_baseline():
    config = parse_config({"target_model": "t.gguf", "protocol": {"name": "context-sweep"}})
    budget = token_budget(config)
    assert budget["requests"] == 48 + 6
    assert budget["generated_tokens"] == 512 * 32 + 4096 * 12 + 12288 * 6 + 36864 * 4
    assert token_budget(config, with_baseline=True)["total_tokens"] == 2 * budget["total_tokens"]


def test_repetitive_output_has_a_low_distinct_ngram_ratio():
    assert distinct_ngram_ratio([1, 2, 3] * 100) < 0.05
    assert distinct_ngram_ratio(list(range(300))) == 1.0


def test_argv_uses_current_flags_and_never_removed_ones():
    config = parse_config(
        {
            "target_model": "t.gguf",
            "draft_model": "d.gguf",
            "spec_types": "draft-dflash",
            "n_max": 12,
            "spec_synth_len": 6,
        }
    )
    engine = Engine(server_path="/x/llama-server", release="b11434", backend="cpu")
    argv = server_argv(
        config, engine=engine, target_path=Path("/m/t.gguf"), draft_path=Path("/m/d.gguf"), port=9
    )
    assert argv[argv.index("--spec-draft-n-max") + 1] == "12"
    assert argv[argv.index("--spec-type") + 1] == "draft-dflash"
    assert argv[argv.index("-md") + 1] == "/m/d.gguf"
    assert argv[argv.index("--spec-synth-len") + 1] == "6.0"
    assert not {"--draft-max", "--draft-min", "--draft"} & set(argv)


def test_engine_cache_key_depends_on_release_and_flags():
    cpu = build_flags(backend="cpu")
    cuda = build_flags(backend="cuda", cuda_architectures="90")
    assert build_dir_for(release=11434, flags=cpu) != build_dir_for(release=11434, flags=cuda)
    assert build_dir_for(release=11434, flags=cpu) != build_dir_for(release=11500, flags=cpu)
    assert "b11434-cuda" in build_dir_for(release=11434, flags=cuda).name


def test_runner_never_imports_django():
    code = (
        "import importlib, pkgutil, sys, runner\n"
        "for m in pkgutil.walk_packages(runner.__path__, 'runner.'):\n"
        "    if m.name != 'runner.__main__': importlib.import_module(m.name)\n"
        "assert not [n for n in sys.modules if n == 'django' or n.startswith('django.')]\n"
        "print('ok')\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok"


def test_a_response_without_timings_is_an_error_not_a_result():
    import httpx

    from runner.errors import EngineResponseError
    from runner.measure import measure_request
    from runner.protocols import RequestSpec

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/metrics":
            return httpx.Response(200, text=METRICS)
        # A stream with no tokens and no timings, as early -bs runs on CUDA (b11434) recorded.
        return httpx.Response(200, text='data: {"content": "", "stop": true}\n\n')

    client = httpx.Client(transport=httpx.MockTransport(answer))
    spec = RequestSpec("measure", 0, None, 16, "hello", 1)
    with pytest.raises(EngineResponseError, match="no timings"):
        measure_request(client, "http://server", spec, timeout_s=5)


def test_llama_server_dies_with_the_process_that_started_it(tmp_path):
    # A stand-in parent starts a long-lived child through LlamaServer's launch path and is then
    # SIGKILLed, as a worker can be; the child must not outlive it.
    script = tmp_path / "parent.py"
    pid_file = tmp_path / "child.pid"
    script.write_text(
        "import subprocess, sys, time\n"
        "from runner.server import _die_with_parent\n"
        "child = subprocess.Popen(['sleep', '300'], start_new_session=True,\n"
        "                         preexec_fn=_die_with_parent)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(300)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], cwd=Path(__file__).parents[2])
    import os
    import signal
    import time

    deadline = time.monotonic() + 20
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child_pid = int(pid_file.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child_pid, 0)
        except ProcessLookupError:
            break
        # A killed child stays a zombie until reaped by init; treat "Z" as gone.
        status = Path(f"/proc/{child_pid}/stat").read_text().split()[2]
        if status == "Z":
            break
        time.sleep(0.05)
    else:
        os.kill(child_pid, signal.SIGKILL)
        raise AssertionError("the child outlived its killed parent")


def test_two_processes_needing_the_same_engine_build_it_once(tmp_path, monkeypatch):
    import threading
    import time

    from runner import engine as engine_module

    monkeypatch.setenv("SPECBOARD_CACHE", str(tmp_path))
    builds = []

    def slow_build(target_dir, **options):
        builds.append(target_dir)
        time.sleep(0.3)
        target_dir.mkdir(parents=True)
        made = Engine(server_path=str(target_dir / "llama-server"), release="b11434", backend="cpu")
        (target_dir / "engine.json").write_text(json.dumps(made.as_dict()))
        return made

    monkeypatch.setattr(engine_module, "_build_into", slow_build)
    found = []
    workers = [
        threading.Thread(target=lambda: found.append(engine_module.build(backend="cpu")))
        for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(builds) == 1
    assert len(found) == 3 and {e.server_path for e in found} == {found[0].server_path}
