"""The DFlash draft checks against llama-server b11434 itself: a crafted draft that
runner.compatibility refuses for its tensors is one llama.cpp fails to load, with the tensor
named in its log, and one it accepts (without the optional attn_v) is one llama.cpp loads. The
server is started directly, past the runner's checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.compatibility import dflash_draft_problem
from runner.config import parse_config
from runner.engines.server import LlamaServer, free_port, server_argv
from runner.errors import EngineCrashedError
from runner.gguf.inspect import inspect_model
from tests.support.gguf_files import write_dflash_variants

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def variants(tiny_models, tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("dflash-variants")
    return write_dflash_variants(tiny_models["tiny-dflash.gguf"], folder)


def start(engine, target: Path, draft: Path) -> LlamaServer:
    config = parse_config(
        {"target_model": "t.gguf", "draft_model": "d.gguf", "spec_types": "draft-dflash"}
    )
    port = free_port()
    argv = server_argv(config, engine=engine, target_path=target, draft_path=draft, port=port)
    return LlamaServer(
        argv, port=port, start_timeout_s=120, library_dir=str(Path(engine.server_path).parent)
    )


@pytest.mark.parametrize(
    ("variant", "llama_cpp_says"),
    [
        ("fc-one-layer-wide", "tensor 'fc.weight' has wrong shape"),
        ("no-enc-norm", "tensor 'enc.output_norm.weight' not found"),
        ("no-ffn-down", "tensor 'blk.1.ffn_down.weight' not found"),
    ],
)
def test_a_draft_the_checks_refuse_for_its_tensors_does_not_load(
    engine, tiny_models, variants, variant, llama_cpp_says
):
    assert dflash_draft_problem(inspect_model(variants[variant])) is not None
    server = start(engine, tiny_models["tiny-qwen3.gguf"], variants[variant])

    with pytest.raises(EngineCrashedError) as crashed:
        server.start()

    assert llama_cpp_says in crashed.value.log_tail


def test_a_draft_without_the_optional_attn_v_passes_the_checks_and_loads(
    engine, tiny_models, variants
):
    assert dflash_draft_problem(inspect_model(variants["no-attn-v"])) is None
    with start(engine, tiny_models["tiny-qwen3.gguf"], variants["no-attn-v"]) as server:
        server.raise_if_dead()
