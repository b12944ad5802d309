"""manage.py register_hardware: a hardware kind of one GPU or several (given, or this host's as
NVML shows them) and the queue its jobs go to."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from leaderboard.models import Hardware
from runner.provenance import cpu_name
from tests.support.fake_nvml import FakeNvml, install, rtx_3090s


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_register_hardware_names_the_queue(db):
    assert (
        run("register_hardware", "NVIDIA H200", "--memory-gib", "141").strip()
        == "h200-141gb\tgpu.h200-141gb"
    )


def test_register_hardware_takes_a_gpu_count_or_this_hosts_gpus(db, monkeypatch):
    assert (
        run("register_hardware", "RTX 3090", "--memory-gib", "24", "--gpu-count", "2").strip()
        == "2x-rtx-3090-24gb\tgpu.2x-rtx-3090-24gb"
    )
    install(monkeypatch, FakeNvml(rtx_3090s(2)))
    assert (
        run("register_hardware", "--this-host").strip() == "2x-rtx-3090-24gb\tgpu.2x-rtx-3090-24gb"
    )
    with pytest.raises(CommandError, match="1 to 16 GPUs"):
        run("register_hardware", "RTX 3090", "--gpu-count", "0")


def test_this_host_without_a_gpu_is_a_cpu_kind_that_knows_its_cpu_model(db, monkeypatch):
    install(monkeypatch, FakeNvml([]))

    slug, queue = run("register_hardware", "--this-host").strip().split("\t")

    kind = Hardware.objects.get(slug=slug)
    # Read as the runner's provenance reads it, so this machine's results are held to it.
    assert kind.cpu_model == cpu_name() and kind.label.startswith("CPU ")
    assert queue == f"gpu.{slug}"
