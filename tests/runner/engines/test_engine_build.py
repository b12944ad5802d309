"""Building and locating engines (runner.engines.build): the cache key, one build at a time."""

import itertools
import json
import os
import threading
import time
from pathlib import Path

from runner.engines import build as engine_build
from runner.engines.build import Engine, build_dir_for, build_flags


def test_engine_cache_key_depends_on_release_and_flags():
    cpu = build_flags(backend="cpu")
    cuda = build_flags(backend="cuda", cuda_architectures="90")
    assert build_dir_for(release=11434, flags=cpu) != build_dir_for(release=11434, flags=cuda)
    assert build_dir_for(release=11434, flags=cpu) != build_dir_for(release=11500, flags=cpu)
    assert "b11434-cuda" in build_dir_for(release=11434, flags=cuda).name


def test_two_processes_needing_the_same_engine_build_it_once(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBOARD_CACHE", str(tmp_path))
    builds = []

    def slow_build(target_dir, **options):
        builds.append(target_dir)
        time.sleep(0.3)
        target_dir.mkdir(parents=True)
        made = Engine(server_path=str(target_dir / "llama-server"), release="b11434", backend="cpu")
        (target_dir / "engine.json").write_text(json.dumps(made.as_dict()))
        return made

    monkeypatch.setattr(engine_build, "_build_into", slow_build)
    found = []
    workers = [
        threading.Thread(target=lambda: found.append(engine_build.build(backend="cpu")))
        for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(builds) == 1
    assert len(found) == 3 and {e.server_path for e in found} == {found[0].server_path}


FAKE_CMAKE = """#!/bin/sh
# Configures at once; "builds" with ninja-style lines and a silent stretch, then places binaries.
if [ "$1" = "--build" ]; then
    echo "[1/3] Building CXX object ggml.cpp.o"
    sleep 0.8
    echo "[2/3] Building CXX object llama.cpp.o"
    sleep 1.5
    echo "[3/3] Linking CXX executable bin/llama-server"
    mkdir -p "$2/bin" && touch "$2/bin/llama-server" "$2/bin/llama-bench"
else
    echo "-- Configuring done"
fi
"""


def test_an_engine_build_reports_its_progress_and_never_stays_silent(tmp_path, monkeypatch):
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "cmake").write_text(FAKE_CMAKE)
    (tools / "cmake").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.setenv("SPECBOARD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(engine_build, "_download_sdist", lambda release: tmp_path / "sdist")
    monkeypatch.setattr(engine_build, "_extract_llama_cpp", lambda sdist, scratch: tmp_path)
    monkeypatch.setattr(engine_build, "_cmake_generator", lambda: [])
    monkeypatch.setattr(engine_build, "PROGRESS_INTERVAL_S", 0.6, raising=False)
    said: list[tuple[float, str]] = []
    started = time.monotonic()

    engine = engine_build.build(
        backend="cpu", log=lambda line: said.append((time.monotonic() - started, line))
    )

    assert Path(engine.server_path).exists()
    progress = [line for _, line in said if "[" in line and "/3]" in line]
    assert any("[1/3] Building CXX object ggml.cpp.o" in line for line in progress), said
    assert any("still running" in line for _, line in said), said
    moments = [0.0] + [moment for moment, _ in said] + [time.monotonic() - started]
    # Never silent for much longer than the interval (a margin for the reader's poll).
    assert max(b - a for a, b in itertools.pairwise(moments)) < 0.6 * 1.5 + 0.3, said
