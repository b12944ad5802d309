"""One spelling per GPU (runner.provenance.normalise_gpu_name), shared with the service."""

import pytest

from runner.provenance import normalise_gpu_name, system_info


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
