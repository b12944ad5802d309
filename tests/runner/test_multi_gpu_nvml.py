"""Several GPUs through a fake NVML: what the runner records of each GPU the engine can use
(runner.provenance: names, memory, the kind's description, each GPU's peak memory) and each
GPU's energy over the measured requests (runner.energy, runner.benchmark)."""

from __future__ import annotations

import os
import time

import pytest

from runner import benchmark, energy
from runner.config import parse_config
from runner.engines.build import Engine
from runner.errors import ConfigError
from runner.gguf.inspect import inspect_model
from runner.protocols import plan_requests
from runner.provenance import MemorySampler, describe_gpus, system_info, visible_gpus
from tests.support.fake_nvml import FakeNvml, fake_gpus, install, rtx_3090s

GIB = 2**30


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


def test_each_gpus_energy_adds_up_to_the_whole():
    before, after = (1_000, 5_000), (3_500, 6_000)
    assert energy.joules_per_gpu_between(before, after) == [2.5, 1.0]
    assert sum(energy.joules_per_gpu_between(before, after)) == energy.joules_between(before, after)
    # A counter that went backwards: no figure, per GPU either.
    assert energy.joules_per_gpu_between(after, before) is None
    assert energy.add_per_gpu([1.0, 2.0], [0.5, 0.5]) == [1.5, 2.5]
    assert energy.add_per_gpu([1.0, 2.0], None) is None
    assert energy.add_per_gpu(None, [0.5, 0.5]) is None


class _TwoGpuSession:
    """A server split over two fake GPUs: each generated token costs GPU 0 3 mJ, GPU 1 1 mJ."""

    argv = ["llama-server"]
    command = "llama-server"
    pid = 4242
    load_seconds = 0.5

    def __init__(self, gpus) -> None:
        self.gpus = gpus

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def log_text(self) -> str:
        return ""

    def recent_log(self) -> str:
        return ""

    def measure(self, spec) -> dict:
        self.gpus[0].energy_millijoules += 3 * spec.output_tokens
        self.gpus[1].energy_millijoules += 1 * spec.output_tokens
        return {"wall_ms": 10.0, "predicted_n": spec.output_tokens, "prompt_n": 4}


def test_a_run_on_two_gpus_records_each_gpus_peak_and_measured_energy(monkeypatch, tiny_models):
    gpus = rtx_3090s(2)
    gpus[0].processes = [(4242, 12 * GIB)]
    gpus[1].processes = [(4242, 10 * GIB)]
    install(monkeypatch, FakeNvml(gpus))
    session = _TwoGpuSession(gpus)
    monkeypatch.setattr(benchmark, "open_session", lambda *args, **kwargs: session)
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "runs": 2, "warmup": 1}}
    )
    target = inspect_model(tiny_models["tiny-qwen3.gguf"])
    plan = plan_requests(config, vocab_size=target.vocab_size)
    measured = benchmark._run_one_config(
        config,
        engine=Engine(server_path="/x", release="b1", backend="cuda"),
        target=target,
        draft=None,
        plan=plan,
        progress=benchmark._Progress(len(plan), None),
        phase="measuring",
        should_cancel=None,
        request_timeout_s=5,
        start_timeout_s=5,
    )
    tokens = 2 * config.protocol.n_predict  # the two measured requests; the warm-up not counted
    assert measured.gpus == [
        {
            "index": 0,
            "peak_memory_bytes": 12 * GIB,
            "energy_joules": pytest.approx(3 * tokens / 1000),
        },
        {"index": 1, "peak_memory_bytes": 10 * GIB, "energy_joules": pytest.approx(tokens / 1000)},
    ]
    assert measured.peak_memory_bytes == 22 * GIB
    assert sum(gpu["energy_joules"] for gpu in measured.gpus) == pytest.approx(
        sum(record["energy_joules"] for record in measured.records)
    )


def fake_cuda_server(tmp_path) -> Engine:
    """A stand-in llama-server whose --help lists the multi-GPU flags (as b11434's does)."""
    binary = tmp_path / "llama-server"
    binary.write_text(
        "#!/bin/sh\necho '-h, --help  -sm, --split-mode  -ts, --tensor-split  -mg, --main-gpu'\n"
        "echo '--spec-draft-device, -devd, --device-draft'\n"
    )
    binary.chmod(0o755)
    return Engine(server_path=str(binary), release="b11434", backend="cuda")


def test_the_runner_refuses_a_split_over_gpus_the_host_does_not_show(
    monkeypatch, tmp_path, tiny_models
):
    engine = fake_cuda_server(tmp_path)
    target = inspect_model(tiny_models["tiny-qwen3.gguf"])
    config = parse_config({"target_model": "tiny-qwen3.gguf", "tensor_split": [1, 1]})
    install(monkeypatch, FakeNvml(rtx_3090s(1)))
    with pytest.raises(ConfigError, match=r"this host's GPUs \(RTX 3090 24GB\) cannot run it: "
                       r"tensor_split: the split gives proportions for 2 GPUs"):  # fmt: skip
        benchmark.check_gpu_placement(config, engine=engine, target=target, draft=None)
    install(monkeypatch, FakeNvml(rtx_3090s(2)))
    benchmark.check_gpu_placement(config, engine=engine, target=target, draft=None)


def test_a_gpu_host_claims_a_job_with_the_gpus_its_engine_sees(monkeypatch, tmp_path):
    from runner import jobs

    host = jobs.JobHost(models_dir=tmp_path, cache_dir=tmp_path, hf_endpoint="http://hub.invalid")
    message = {"job_id": 1, "config": {"target_model": "missing.gguf"}, "models": {}}
    install(monkeypatch, FakeNvml(rtx_3090s(2)))
    events: list[dict] = []
    jobs.run_job(message, host=host, progress=events.append)
    assert events[0]["phase"] == "started"
    assert [gpu["name"] for gpu in events[0]["gpus"]] == ["RTX 3090", "RTX 3090"]
    # Off NVML the event is the phase alone, as it always was.
    install(monkeypatch, None)
    events.clear()
    jobs.run_job(message, host=host, progress=events.append)
    assert events[0] == {"phase": "started"}


def test_a_host_refuses_a_job_of_a_kind_whose_gpus_its_engine_does_not_see(monkeypatch, tmp_path):
    from runner import jobs

    host = jobs.JobHost(models_dir=tmp_path, cache_dir=tmp_path, hf_endpoint="http://hub.invalid")
    kind = [{"name": "RTX 3090", "memory_bytes": 24 * GIB}] * 2
    message = {"job_id": 1, "config": {"target_model": "missing.gguf"}, "models": {}, "gpus": kind}
    install(monkeypatch, FakeNvml(rtx_3090s(1)))
    outcome = jobs.run_job(message, host=host, progress=lambda event: None)
    assert isinstance(outcome, jobs.JobFailed)
    assert outcome.error.startswith("this host cannot run a job of its hardware kind: the kind is "
                                    "2x RTX 3090 24GB, but this host's engine sees RTX 3090 24GB")  # fmt: skip
    # With the kind's GPUs (or off NVML, where nothing can be checked) the job goes on.
    for nvml in (FakeNvml(rtx_3090s(2)), None):
        install(monkeypatch, nvml)
        outcome = jobs.run_job(message, host=host, progress=lambda event: None)
        assert "hardware kind" not in outcome.error
