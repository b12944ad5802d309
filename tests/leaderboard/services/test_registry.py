"""The registry (services.registry): registering a model file marks it as test weights when its
header says so (the tiny fixtures, any GGUF with the mark or llama.cpp's test tokenizer); a
hardware kind is made from the GPUs NVML shows (how many of which model, mixed GPUs a kind of
their own) and served only by a host with exactly its GPUs; retiring an engine build takes its
rows off the board."""

from __future__ import annotations

import pytest

from leaderboard import selectors, services
from leaderboard.messaging.celery import gpu_queue
from leaderboard.models import Hardware, Job, ModelFile
from runner.provenance import describe_gpus
from tests.support.baselines import finish, speculative_and_baseline
from tests.support.gguf_files import write_gguf
from tests.support.gpu_kinds import GIB, RTX_3090, RTX_4090, nvml_gpus


def test_registration_marks_the_tiny_fixtures_and_any_gguf_that_says_test_weights(
    models, settings, tmp_path
):
    assert all(model.test_weights for model in models.values())
    assert ModelFile.objects.filter(test_weights=False).count() == 0

    settings.SPECBOARD_MODELS_DIR = tmp_path
    real = services.register_model(path=write_gguf(tmp_path / "real.gguf", tokenizer="gpt2").name)
    marked = write_gguf(tmp_path / "marked.gguf", tokenizer="gpt2", marked=True)
    old_tiny = write_gguf(tmp_path / "old-tiny.gguf", tokenizer="test")

    assert real.test_weights is False
    assert services.register_model(path=marked.name).test_weights is True
    assert services.register_model(path=old_tiny.name).test_weights is True
    assert ModelFile.objects.get(name="real").test_weights is False


@pytest.fixture
def jobs(user, models, hardware, enqueued) -> tuple[Job, Job]:
    """A speculative job and its paired baseline, submitted and measured separately."""
    return speculative_and_baseline(user, hardware)


def test_retiring_an_engine_build_takes_its_rows_off_the_board(jobs, make_result):
    speculative, _ = jobs
    finish(speculative, make_result(speculative.config.key, [100.0]))

    assert services.retire_engine_build(release="b11434") == 1
    assert list(selectors.leaderboard_entries()) == []
    assert len(selectors.leaderboard_entries(include_retired=True)) == 1


# Hardware kinds of several GPUs: a kind from the GPUs NVML shows on a host ------------------


def test_a_kind_says_how_many_gpus_of_which_model(one_3090, two_3090s):
    assert (one_3090.slug, one_3090.label, one_3090.gpu_count) == ("rtx-3090-24gb", "RTX 3090", 1)
    assert (two_3090s.slug, two_3090s.label, two_3090s.gpu_count) == (
        "2x-rtx-3090-24gb",
        "2x RTX 3090 24GB",
        2,
    )
    assert two_3090s.queue_name == gpu_queue("2x-rtx-3090-24gb") != one_3090.queue_name
    assert two_3090s.gpu_memory() == [24 * GIB, 24 * GIB] and one_3090.gpu_memory() == [24 * GIB]
    # The same GPUs again, or the count given by hand, find the same kind.
    again = services.register_hardware_from_gpus(gpus=nvml_gpus(RTX_3090, RTX_3090))
    by_hand = services.register_hardware(
        gpu_name="NVIDIA GeForce RTX 3090", memory_bytes=24 * GIB, gpu_count=2
    )
    assert again == by_hand == two_3090s
    assert Hardware.objects.count() == 2


def test_a_single_gpu_kind_is_what_it_always_was(db):
    kind = services.register_hardware(gpu_name="NVIDIA H200", memory_bytes=141 * GIB)
    assert (kind.slug, kind.gpu_count, kind.gpus, str(kind)) == ("h200-141gb", 1, [], "H200")
    assert kind.gpu_list() == [{"name": "H200", "memory_bytes": 141 * GIB}]


def test_mixed_gpus_are_a_kind_of_their_own(two_3090s):
    mixed = services.register_hardware_from_gpus(gpus=nvml_gpus(RTX_4090, RTX_3090))
    assert mixed.label == "RTX 4090 24GB + RTX 3090 24GB"
    assert mixed.gpu_count == 2 and mixed.slug not in ("2x-rtx-3090-24gb", "rtx-4090-24gb")


@pytest.mark.parametrize(
    "gpus",
    [
        [],
        "two",
        [{"name": ""}],
        [{"name": "RTX 3090", "memory_bytes": -1}],
        [{"name": "RTX 3090", "memory_bytes": True}],
        [{"name": "x\x00"}],
        [RTX_3090] * 17,
    ],
)
def test_gpus_that_are_not_a_list_of_named_gpus_make_no_kind(db, gpus):
    with pytest.raises(services.RegistrationError):
        services.register_hardware_from_gpus(gpus=gpus)
    assert not Hardware.objects.exists()


def test_a_host_serves_a_kind_only_with_exactly_its_gpus(one_3090, two_3090s):
    def problem(kind: Hardware, *gpus: dict) -> str | None:
        return services.gpus_serve_kind_problem(hardware=kind, gpus=nvml_gpus(*gpus))

    assert problem(two_3090s, RTX_3090, RTX_3090) is None
    assert problem(one_3090, RTX_3090) is None
    # NVML's total memory varies a little with the driver: within 5% it is the same GPU.
    close = {"name": "NVIDIA GeForce RTX 3090", "memory_bytes": 23 * GIB}
    assert problem(two_3090s, close, RTX_3090) is None

    one_for_two = problem(two_3090s, RTX_3090)
    assert "2x RTX 3090 24GB" in one_for_two and "(1 GPU;" in one_for_two
    # A larger host would spread a layer split over every GPU it shows: narrow it first.
    assert "CUDA_VISIBLE_DEVICES" in problem(one_3090, RTX_3090, RTX_3090)
    assert problem(two_3090s, RTX_3090, RTX_4090) == (
        "GPU 1 of this host is RTX 4090, not RTX 3090 as in 2x RTX 3090 24GB"
    )
    smaller = {"name": "NVIDIA GeForce RTX 3090", "memory_bytes": 12 * GIB}
    assert "has 12 GiB, not the 24 GiB" in problem(two_3090s, RTX_3090, smaller)
    # A kind of one GPU, often named by hand, asks for one GPU whatever NVML calls it.
    assert problem(one_3090, RTX_4090) is None
    assert services.gpus_serve_kind_problem(hardware=one_3090, gpus={"name": "RTX 3090"})


def test_describe_gpus_is_the_kinds_name(two_3090s):
    assert describe_gpus(two_3090s.gpu_list()) == two_3090s.label
