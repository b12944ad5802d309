"""The llama-server command line and process (runner.engines.server), without a real server: the
process started from an argument list (shell syntax in it runs nothing), and dying with its
parent."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.config import parse_config
from runner.engines.build import Engine
from runner.engines.server import LlamaServer, free_port, server_argv
from runner.errors import EngineBuildError, EngineCrashedError


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


DFLASH = {
    "target_model": "t.gguf",
    "draft_model": "d.gguf",
    "spec_types": "draft-dflash",
    "n_max": 12,
}
CUDA = Engine(server_path="/x/llama-server", release="b11434", backend="cuda")
PLACEMENT_FLAGS = {"--split-mode", "--tensor-split", "--main-gpu", "--spec-draft-device"}


def dflash_argv(engine: Engine = CUDA, **placement) -> list[str]:
    return server_argv(
        parse_config(DFLASH | placement),
        engine=engine,
        target_path=Path("/m/t.gguf"),
        draft_path=Path("/m/d.gguf"),
        port=9,
    )


def value_after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_a_config_at_the_default_split_gets_no_multi_gpu_flag():
    assert not PLACEMENT_FLAGS & set(dflash_argv())
    assert dflash_argv() == dflash_argv(split_mode="layer", main_gpu=0)


def test_the_multi_gpu_options_become_llama_servers_flags():
    argv = dflash_argv(split_mode="row", tensor_split="0.75,0.25", main_gpu=1, draft_gpu=0)
    assert value_after(argv, "--split-mode") == "row"
    # The proportions as the smallest whole numbers in the same ratio.
    assert value_after(argv, "--tensor-split") == "3,1"
    assert value_after(argv, "--main-gpu") == "1"
    # The draft on its own GPU, by the backend's device name (b11434's --device-draft).
    assert value_after(argv, "--spec-draft-device") == "CUDA0"
    single = dflash_argv(split_mode="none")
    assert value_after(single, "--split-mode") == "none"
    assert not {"--tensor-split", "--main-gpu", "--spec-draft-device"} & set(single)


def test_a_draft_gpu_needs_an_engine_that_names_its_gpus():
    for backend in ("cpu", "unknown"):
        engine = Engine(server_path="/x/llama-server", release="b11434", backend=backend)
        with pytest.raises(EngineBuildError, match="draft_gpu needs a GPU engine"):
            dflash_argv(engine, draft_gpu=1)


def test_llama_server_dies_with_the_process_that_started_it(tmp_path):
    # A stand-in parent starts a long-lived child through LlamaServer's launch path and is then
    # SIGKILLed, as a worker can be; the child must not outlive it.
    script = tmp_path / "parent.py"
    pid_file = tmp_path / "child.pid"
    script.write_text(
        "import subprocess, sys, time\n"
        "from runner.engines.server import _die_with_parent\n"
        "child = subprocess.Popen(['sleep', '300'], start_new_session=True,\n"
        "                         preexec_fn=_die_with_parent)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(300)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], cwd=Path(__file__).parents[3])
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


def test_shell_syntax_in_a_model_path_reaches_the_server_as_one_argument_and_runs_nothing(
    tmp_path,
):
    # The server is started from an argument list, never through a shell: a stand-in
    # llama-server writes down the arguments it was given, one a line, and exits.
    given, pwned = tmp_path / "argv.txt", tmp_path / "pwned"
    server = tmp_path / "llama-server"
    server.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > '{given}'\nexit 3\n")
    server.chmod(0o755)
    hostile = tmp_path / f"$(touch {pwned}); `touch {pwned}` | touch {pwned} && x.gguf"
    config = parse_config({"target_model": "x.gguf", "cache_type_k": "q8_0"})
    port = free_port()
    argv = server_argv(
        config,
        engine=Engine(server_path=str(server), release="b11434", backend="cpu"),
        target_path=hostile,
        draft_path=None,
        port=port,
    )

    with pytest.raises(EngineCrashedError, match="exited with code 3"):
        LlamaServer(argv, port=port, start_timeout_s=30).start()

    assert given.read_text().splitlines() == argv[1:]
    assert str(hostile) in given.read_text().splitlines()
    assert not pwned.exists()
