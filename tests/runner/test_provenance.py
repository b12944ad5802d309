"""What the runner records of the machine (runner.provenance): one spelling per GPU, shared
with the service, and through a fake NVML each GPU the engine can use (names, memory, the kind's
description) and each GPU's peak memory while the server runs."""

from __future__ import annotations

import os
import time

import pytest

from runner.provenance import (
    MemorySampler,
    describe_gpus,
    normalise_gpu_name,
    system_info,
    visible_gpus,
)
from tests.support.fake_nvml import FakeNvml, fake_gpus, install, rtx_3090s

GIB = 2**30


@pytest.mark.parametrize(
    "raw, name",
    [
        ("NVIDIA H200", "H200"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("GeForce RTX(TM) 4090", "RTX 4090"),
        ("NVIDIA(R) Tesla(R) V100", "Tesla V100"),
        ("nvidia  a100-sxm4-80gb ", "a100-sxm4-80gb"),
        ("RTX™ 6000 Ada", "RTX 6000 Ada"),
        ("", "unknown"),
        ("NVIDIA", "unknown"),
    ],
)
def test_gpu_names_lose_vendor_words_and_trademark_signs(raw, name):
    assert normalise_gpu_name(raw) == name


def test_a_normalised_name_stays_the_same_when_normalised_again():
    assert normalise_gpu_name(normalise_gpu_name("NVIDIA GeForce RTX 4090")) == "RTX 4090"


def test_system_info_has_the_same_keys_with_or_without_a_gpu():
    info = system_info()
    assert {"gpu", "gpu_raw_name", "gpu_count", "gpu_memory_bytes", "driver", "cuda"} <= set(info)


# Several GPUs through a fake NVML -------------------------------------------------------------


def test_every_visible_gpu_is_described_by_its_name_and_memory(monkeypatch):
    nvml = FakeNvml(rtx_3090s(2))
    install(monkeypatch, nvml)
    gpus = visible_gpus()
    assert gpus == [
        {
            "index": i,
            "name": "RTX 3090",
            "raw_name": "NVIDIA GeForce RTX 3090",
            "memory_bytes": 24 * GIB,
        }
        for i in range(2)
    ]
    assert describe_gpus(gpus) == "2x RTX 3090 24GB"
    assert nvml.inits == nvml.shutdowns == 1
    assert system_info()["gpus"] == gpus


def test_the_gpus_cuda_hides_are_not_the_engines(monkeypatch):
    nvml = FakeNvml(
        rtx_3090s(1) + fake_gpus(1, name="NVIDIA GeForce RTX 4090", memory_total=24 * GIB)
    )
    install(monkeypatch, nvml)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    (only,) = visible_gpus()
    # Numbered as the engine numbers it: its first GPU.
    assert (only["index"], only["name"]) == (0, "RTX 4090")


def test_without_nvml_there_is_no_gpu_list(monkeypatch):
    install(monkeypatch, None)
    assert visible_gpus() is None
    assert system_info()["gpus"] is None
    install(monkeypatch, FakeNvml([], init_fails=True))
    assert visible_gpus() is None


@pytest.mark.parametrize(
    ("gpus", "words"),
    [
        ([{"name": "NVIDIA H200", "memory_bytes": 150_000_000_000}], "H200 140GB"),
        ([{"name": "RTX 4090", "memory_bytes": 24 * GIB}, {"name": "RTX 3090", "memory_bytes": 24 * GIB}],
         "RTX 4090 24GB + RTX 3090 24GB"),
        ([{"name": "RTX 3090", "memory_bytes": None}] * 3, "3x RTX 3090"),
        ([], "no GPU"),
    ],
)  # fmt: skip
def test_a_set_of_gpus_is_spelled_one_way(gpus, words):
    assert describe_gpus(gpus) == words


def sampled(sampler: MemorySampler) -> MemorySampler:
    sampler.start()
    deadline = time.monotonic() + 5
    while sampler.peak_bytes == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    return sampler


def test_the_sampler_keeps_each_gpus_peak_and_the_peak_of_their_total(monkeypatch):
    gpus = rtx_3090s(2)
    gpus[0].processes = [(4242, 20 * GIB), (7, 3 * GIB)]
    gpus[1].processes = [(4242, 9 * GIB)]
    install(monkeypatch, FakeNvml(gpus))
    sampler = sampled(MemorySampler(4242, interval_s=0.01))
    # Only the server's own memory on each GPU, not another process's.
    assert sampler.kind == "gpu"
    assert sampler.gpu_peaks == [20 * GIB, 9 * GIB]
    assert sampler.peak_bytes == 29 * GIB


def test_where_nvml_hides_the_server_each_gpus_whole_use_counts(monkeypatch):
    # In a container NVML lists no process of ours: each GPU's memory in use is the figure.
    gpus = rtx_3090s(2, memory_used=5 * GIB)
    gpus[1].memory_used = 11 * GIB
    install(monkeypatch, FakeNvml(gpus))
    sampler = sampled(MemorySampler(4242, interval_s=0.01))
    assert sampler.gpu_peaks == [5 * GIB, 11 * GIB]
    assert sampler.peak_bytes == 16 * GIB


def test_off_nvml_the_sampler_reads_the_process_and_no_gpu(monkeypatch):
    install(monkeypatch, None)
    sampler = sampled(MemorySampler(os.getpid(), interval_s=0.01))
    assert sampler.kind == "process" and sampler.gpu_peaks is None and sampler.peak_bytes > 0
