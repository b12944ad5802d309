"""manage.py register_hardware: a hardware kind of one GPU or several (given, or this host's as
NVML shows them) and the queue its jobs go to."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

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
    install(monkeypatch, FakeNvml([]))
    with pytest.raises(CommandError, match="no GPU"):
        run("register_hardware", "--this-host")
    with pytest.raises(CommandError, match="1 to 16 GPUs"):
        run("register_hardware", "RTX 3090", "--gpu-count", "0")
