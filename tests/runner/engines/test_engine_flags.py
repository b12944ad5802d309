"""Which flags a llama-server binary accepts, read from its own --help (runner.engines.flags)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from runner.config import parse_config
from runner.engines.build import Engine, locate
from runner.engines.flags import accepted_flags, flags_in_help, missing_flags, require_flags
from runner.engines.server import gpu_placement_argv, server_argv
from runner.errors import EngineBuildError

# Lines as b11434's llama-server --help prints them (common/arg.cpp).
HELP_LINES = """\
-h,    --help, --usage                  print usage and exit
-sm,   --split-mode {none,layer,row,tensor}
                                        how to split the model across multiple GPUs, one of:
-ts,   --tensor-split N0,N1,N2,...      fraction of the model to offload to each GPU
-mg,   --main-gpu INDEX                 the GPU to use for the model (with split-mode = none)
--spec-draft-device, -devd, --device-draft <dev1,dev2,..>
--spec-draft-backend-sampling, --no-spec-draft-backend-sampling
"""

PLACED = {
    "target_model": "t.gguf",
    "draft_model": "d.gguf",
    "spec_types": "draft-dflash",
    "split_mode": "row",
    "tensor_split": [1, 1],
    "main_gpu": 1,
    "draft_gpu": 0,
}


def fake_server(tmp_path: Path, help_text: str, *, code: int = 0) -> Engine:
    """A stand-in llama-server that prints help_text for --help and exits with code."""
    binary = tmp_path / "llama-server"
    binary.write_text(f"#!/bin/sh\ncat <<'HELP'\n{help_text}HELP\nexit {code}\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    return Engine(server_path=str(binary), release="b9999", backend="cuda")


def test_every_spelling_of_a_flag_in_the_help_counts():
    flags = flags_in_help(HELP_LINES)
    assert {"-sm", "--split-mode", "-ts", "--tensor-split", "-mg", "--main-gpu"} <= flags
    assert {"--spec-draft-device", "-devd", "--device-draft"} <= flags
    assert "--no-spec-draft-backend-sampling" in flags
    # A value or a word inside the text is not a flag.
    assert not {"-model", "-to", "--offload", "N0"} & flags


def test_a_binary_that_lists_the_flags_passes_and_one_that_does_not_is_named(tmp_path):
    config = parse_config(PLACED)
    (tmp_path / "new").mkdir()
    (tmp_path / "old").mkdir()
    knows = fake_server(tmp_path / "new", HELP_LINES)
    require_flags(knows, gpu_placement_argv(config, engine=knows))

    older = HELP_LINES.replace("--spec-draft-device, -devd, --device-draft <dev1,dev2,..>\n", "")
    old = fake_server(tmp_path / "old", older)
    assert missing_flags(old, gpu_placement_argv(config, engine=old)) == ["--spec-draft-device"]
    with pytest.raises(EngineBuildError, match="does not accept --spec-draft-device"):
        require_flags(old, gpu_placement_argv(config, engine=old))


def test_a_binary_whose_help_fails_is_an_engine_error(tmp_path):
    broken = fake_server(tmp_path, "error while loading shared libraries\n", code=127)
    with pytest.raises(EngineBuildError, match="--help exited with code 127"):
        accepted_flags(broken)


@pytest.mark.engine
def test_the_b11434_binary_accepts_every_flag_a_multi_gpu_config_composes():
    engine = locate()
    config = parse_config(PLACED | {"n_max": 12, "draft_n_gpu_layers": 99, "n_gpu_layers": 99})
    cuda_named = Engine(**(engine.as_dict() | {"backend": "cuda"}))
    argv = server_argv(
        config,
        engine=cuda_named,
        target_path=Path("/m/t.gguf"),
        draft_path=Path("/m/d.gguf"),
        port=9,
    )
    assert missing_flags(engine, argv) == []
    assert {"--split-mode", "--tensor-split", "--main-gpu", "--spec-draft-device"} <= set(argv)
    assert {"--device", "--device-draft", "-devd", "-sm", "-ts", "-mg"} <= accepted_flags(engine)


@pytest.mark.engine
@pytest.mark.parametrize(
    "placement", [{"split_mode": "none"}, {"split_mode": "row", "tensor_split": [1]}]
)
def test_a_split_config_runs_on_the_cpu_build_with_its_flags_in_the_command(tiny_models, placement):
    # A CPU build warns that split options have no effect and runs: the command is the one a
    # GPU host runs, measured end to end.
    from runner.benchmark import run_benchmark

    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "threads": 2,
         "protocol": {"name": "quick", "runs": 2, "warmup": 1, "n_predict": 16}} | placement
    )  # fmt: skip
    models_dir = next(iter(tiny_models.values())).parent
    result = run_benchmark(config, models_dir=models_dir, engine=locate())
    argv = result.provenance.argv
    assert argv[argv.index("--split-mode") + 1] == config.split_mode
    assert result.config_key == config.key
    assert result.summary.decode_tokens_per_second.n == 2
    # Off NVML there is no GPU to report.
    assert result.summary.gpus is None
