"""Hardware kinds of one or several GPUs for tests: GPUs as NVML shows them on a host, the kinds
registered from them (one RTX 3090, two), and one config measured on each of the two."""

from __future__ import annotations

import pytest

from leaderboard import services
from leaderboard.models import Hardware, LeaderboardEntry
from runner.config import parse_config

GIB = 2**30
MIB = 2**20
RTX_3090 = {"name": "NVIDIA GeForce RTX 3090", "memory_bytes": 24 * GIB}
RTX_4090 = {"name": "NVIDIA GeForce RTX 4090", "memory_bytes": 24 * GIB}


def nvml_gpus(*gpus: dict) -> list[dict]:
    """GPUs as runner.provenance.visible_gpus gives them on a host."""
    return [{"index": i, "raw_name": gpu["name"]} | gpu for i, gpu in enumerate(gpus)]


@pytest.fixture
def one_3090(db) -> Hardware:
    return services.register_hardware_from_gpus(gpus=nvml_gpus(RTX_3090))


@pytest.fixture
def two_3090s(db) -> Hardware:
    return services.register_hardware_from_gpus(gpus=nvml_gpus(RTX_3090, RTX_3090))


@pytest.fixture
def both_rows(
    make_result, ranked_models, one_3090, two_3090s, user
) -> tuple[LeaderboardEntry, LeaderboardEntry]:
    """One config measured on one RTX 3090 and on two: its two rows (of models an admin cleared
    of their test-weights mark: an imported file keeps the mark its header carries)."""
    config = parse_config(
        {
            "target_model": "tiny-qwen3.gguf",
            "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
        }
    )
    for kind, decode in ((one_3090, [50.0, 51.0, 52.0]), (two_3090s, [70.0, 71.0, 72.0])):
        services.import_runner_result(
            owner=user, hardware=kind, result=make_result(config, decode), source="test"
        )
    return (
        LeaderboardEntry.objects.get(hardware=one_3090),
        LeaderboardEntry.objects.get(hardware=two_3090s),
    )
