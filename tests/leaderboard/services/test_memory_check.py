"""A config that cannot fit in the memory its hardware has (the weights and the K/V cache of
every slot's context) is refused at the door with a field error, before any job or engine."""

from __future__ import annotations

import json

import pytest

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Job
from runner.compatibility import estimated_memory_bytes, memory_problems
from runner.config import BenchmarkConfig
from runner.gguf.inspect import inspect_model
from runner.gguf.tiny_models import HEAD_DIM, N_HEAD_KV, TARGET_LAYERS

MIB = 1024**2


def concurrency(levels: list[int], **extra) -> dict:
    return {
        "target_model": "tiny-qwen3.gguf",
        "protocol": {
            "name": "concurrency",
            "levels": levels,
            "input_tokens": 512,
            "output_tokens": 256,
        },
    } | extra


def test_the_estimate_is_the_weights_and_every_slots_kv_cache(tiny_models):
    target = inspect_model(tiny_models["tiny-qwen3.gguf"])
    # The tiny qwen3: its layers x its K/V heads x (key + value length) per token of context.
    assert target.kv_elements_per_token == TARGET_LAYERS * N_HEAD_KV * 2 * HEAD_DIM
    config = BenchmarkConfig.model_validate(concurrency([1, 2, 4]))
    quantized = BenchmarkConfig.model_validate(
        concurrency([1, 2, 4], cache_type_k="q8_0", cache_type_v="q8_0")
    )

    tokens = (512 + 256 + 16) * 4
    assert (
        estimated_memory_bytes(config, target, None)
        == target.size_bytes + target.kv_elements_per_token * tokens * 2
    )
    assert estimated_memory_bytes(quantized, target, None) == int(
        target.size_bytes + target.kv_elements_per_token * tokens * 34 / 32
    )
    assert memory_problems(config, target, None, memory_bytes=None) == {}


def test_levels_that_do_not_fit_are_a_field_error_and_queue_nothing(
    user, models, hardware, enqueued
):
    # 64 slots of 784 tokens need 50,176 tokens of K/V cache, about 25 MiB for the tiny model.
    hardware.memory_bytes = 16 * MIB
    hardware.save()

    with pytest.raises(services.SubmissionError) as refused:
        services.submit_config(
            owner=user, data=concurrency([1, 8, 64]), hardware_slug=hardware.slug
        )

    (message,) = refused.value.errors["protocol.concurrency.levels"]
    assert "64 slot(s) with 50176 tokens" in message
    assert "above the 16.0 MiB this hardware has" in message
    assert not Job.objects.exists() and enqueued == []
    # The same levels fit in more memory, and fewer levels fit in this one.
    services.submit_config(owner=user, data=concurrency([1, 8]), hardware_slug=hardware.slug)
    hardware.memory_bytes = 1024 * MIB
    hardware.save()
    services.submit_config(owner=user, data=concurrency([1, 8, 64]), hardware_slug=hardware.slug)
    assert Job.objects.count() == 2


def test_a_long_context_that_does_not_fit_is_a_context_error(user, models, hardware):
    hardware.memory_bytes = 2 * MIB
    hardware.save()
    data = {
        "target_model": "tiny-qwen3.gguf",
        "protocol": {"name": "depth", "depths": [3000], "output_tokens": 16, "requests": 1},
    }

    with pytest.raises(services.SubmissionError) as refused:
        services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)

    assert "K/V cache" in refused.value.errors["ctx_size"][0]


def test_the_api_gives_the_field_error(user, models, hardware, client):
    hardware.memory_bytes = 16 * MIB
    hardware.save()
    key = issue_api_token(user=user, name="memory").key

    response = client.post(
        "/api/v1/submissions",
        {"config": concurrency([1, 8, 64]), "hardware": hardware.slug},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )

    assert response.status_code == 400
    assert "MiB this hardware has" in json.dumps(response.json())
    assert not Job.objects.exists()
