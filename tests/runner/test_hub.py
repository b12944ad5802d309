"""Hugging Face Hub calls (runner.hub) against a Hub that does not answer: resolving a revision,
reading a header remotely and streaming a file's sha256 each fail as one HubError. (The calls
against a local Hub that answers are in test_model_cache.py and test_jobs.py.)"""

from __future__ import annotations

import pytest

from runner import hub as runner_hub
from tests.support.hub_server import closed_port

REPO = "tiny-org/tiny-qwen3-GGUF"
FILE = "tiny-qwen3.gguf"


@pytest.mark.parametrize(
    "call",
    [
        lambda port: runner_hub.resolve_hub_file(
            repo=REPO, file=FILE, revision=None, endpoint=f"http://127.0.0.1:{port}"
        ),
        lambda port: runner_hub.read_remote_header(
            runner_hub.HubFile(REPO, FILE, "0" * 40, 4096, None, f"http://127.0.0.1:{port}/f"),
            header_copy=runner_hub.Path("/dev/null"),
        ),
        lambda port: runner_hub.stream_sha256(
            runner_hub.HubFile(REPO, FILE, "0" * 40, 4096, None, f"http://127.0.0.1:{port}/f")
        ),
    ],
    ids=["resolve", "header", "sha256"],
)
def test_a_hub_that_does_not_answer_is_a_hub_error(call):
    with pytest.raises(runner_hub.HubError):
        call(closed_port())
