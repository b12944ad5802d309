"""bench/gpu/h200_split.py imports without running, and builds each split variant's config
through the runner's schema: the variants a machine's GPU count allows, each with its flags."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from runner.engines.build import Engine
from runner.engines.server import server_argv

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu" / "h200_split.py"


@pytest.fixture(scope="module")
def split():
    spec = importlib.util.spec_from_file_location("h200_split", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_gpu_runs_split_mode_none_only_and_two_run_every_mode(split):
    assert [name for name, _ in split.variants_for(1)] == ["none"]
    assert [name for name, _ in split.variants_for(0)] == ["none"]
    assert [name for name, _ in split.variants_for(2)] == [
        "none",
        "layer",
        "row",
        "none-draft-gpu1",
    ]


def test_each_variant_is_a_paired_dflash_config_with_its_own_flags(split):
    cuda = Engine(server_path="/x/llama-server", release="b11434", backend="cuda")
    keys = set()
    for name, placement in split.variants_for(2):
        config = split.split_config("qwen3-8b", placement)
        assert config.spec_types == ["draft-dflash"] and config.is_synthetic
        assert config.protocol.depths == [512, 4096]
        argv = server_argv(
            config, engine=cuda, target_path=Path("/m/t.gguf"), draft_path=Path("/m/d.gguf"), port=9
        )
        # The engine's default (layer) gets no flag; every other mode names itself.
        assert ("--split-mode" in argv) == (config.split_mode != "layer")
        assert ("--spec-draft-device" in argv) == (name == "none-draft-gpu1")
        keys.add(config.key)
        assert split.result_name(name, 2) == f"8b-split-{name}-2gpu"
    # layer is the default split: its key is the plain config's, and every variant is its own.
    assert len(keys) == 4
    assert (
        split.split_config("qwen3-8b", {"split_mode": "layer"}).key
        == split.config_for("qwen3-8b", spec=True, n_max=15, depths=[512, 4096]).key
    )
