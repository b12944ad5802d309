"""Building and locating engines (runner.engines.build): the cache key, one build at a time."""

import json
import threading
import time

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
