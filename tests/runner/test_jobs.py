"""A GPU host's job (runner.jobs): Hub models fetched from a local Hub with the real
huggingface_hub, every model's bytes checked against the registered sha256 once and hashed once,
progress reported (the started event naming the GPUs the engine sees), a job of a hardware kind
whose GPUs the engine does not see failed, and every way a job ends returned as an outcome,
never raised."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from runner import benchmark, jobs
from runner.errors import BenchmarkCancelled, EngineBuildError, EngineCrashedError
from runner.gguf import inspect as gguf_inspect
from runner.gguf.inspect import sha256_file
from runner.hub import resolve_hub_file
from tests.support.fake_nvml import FakeNvml, install, rtx_3090s
from tests.support.hub_server import HubServer

GIB = 2**30
REPO = "tiny-org/tiny-GGUF"
FILE = "tiny-qwen3.gguf"


@pytest.fixture
def hub(tiny_models):
    with HubServer() as server:
        server.commit(REPO, {FILE: tiny_models[FILE]})
        yield server


@pytest.fixture
def host(tmp_path, hub, tiny_models) -> jobs.JobHost:
    return jobs.JobHost(
        models_dir=tiny_models[FILE].parent, cache_dir=tmp_path / "cache", hf_endpoint=hub.endpoint
    )


def hub_model(hub: HubServer) -> dict:
    """The Hub file as the service's job message names it (services.jobs.job_payload)."""
    found = resolve_hub_file(repo=REPO, file=FILE, revision="main", endpoint=hub.endpoint)
    return {
        "path": found.reference,
        "sha256": found.sha256,
        "hf_repo": REPO,
        "hf_file": FILE,
        "hf_revision": found.revision,
        "size_bytes": found.size_bytes,
    }


def message(target: dict, **config) -> dict:
    config = {"target_model": target["path"], "protocol": {"name": "quick", "runs": 2}} | config
    return {"job_id": 7, "config": config, "models": {"target": target, "draft": None}}


class Benchmark:
    """Stands in for run_benchmark: records what it was given, then ends as told."""

    def __init__(self, ends=None) -> None:
        self.calls: list[dict] = []
        self.ends = ends

    def __call__(self, config, *, models_dir, progress, **options):
        self.calls.append({"bytes": (models_dir / config.target_model).read_bytes()} | options)
        if isinstance(self.ends, BaseException):
            raise self.ends
        if callable(self.ends):
            self.ends(progress)
        return "the result"


@pytest.fixture
def fake_benchmark(monkeypatch) -> Benchmark:
    stand_in = Benchmark()
    monkeypatch.setattr(jobs, "run_benchmark", stand_in)
    return stand_in


def test_a_hub_model_is_fetched_into_the_cache_and_the_benchmark_runs_on_those_bytes(
    hub, host, tiny_models, fake_benchmark
):
    events: list[dict] = []

    outcome = jobs.run_job(message(hub_model(hub)), host=host, progress=events.append)

    assert outcome == jobs.JobSucceeded("the result")
    assert fake_benchmark.calls[0]["bytes"] == tiny_models[FILE].read_bytes()
    assert events[0] == {"phase": "started"}
    size = tiny_models[FILE].stat().st_size
    assert events[-1] == {"phase": "downloading", "downloaded_bytes": size, "total_bytes": size}


def test_a_hub_file_whose_bytes_changed_is_refused_before_any_engine(
    hub, host, tiny_models, fake_benchmark
):
    target = hub_model(hub)
    changed = bytearray(tiny_models[FILE].read_bytes())
    changed[-1] ^= 0xFF
    hub._blobs[target["sha256"]] = bytes(changed)  # the CDN now serves other bytes

    outcome = jobs.run_job(message(target), host=host, progress=lambda event: None)

    assert isinstance(outcome, jobs.JobFailed) and "sha256 mismatch" in outcome.error
    assert fake_benchmark.calls == []


def test_a_local_model_changed_after_registration_fails_before_the_benchmark(host, fake_benchmark):
    target = {"path": FILE, "sha256": "a" * 64}

    outcome = jobs.run_job(message(target), host=host, progress=lambda event: None)

    assert outcome == jobs.JobFailed(
        f"target model {FILE} on this worker differs from the registered file (sha256 "
        "mismatch): it was changed after registration"
    )
    assert fake_benchmark.calls == []


def test_an_invalid_config_fails_before_anything_is_downloaded(hub, host, fake_benchmark):
    outcome = jobs.run_job(
        message(hub_model(hub), protocol={"name": "quick", "runs": 0}),
        host=host,
        progress=lambda event: None,
    )

    assert isinstance(outcome, jobs.JobFailed) and "invalid config" in outcome.error
    assert hub.cdn_gets() == [] and fake_benchmark.calls == []


def test_a_job_mixing_a_local_and_a_hub_model_needs_the_cache_in_the_models_dir(
    hub, host, tiny_models, fake_benchmark
):
    job = message(hub_model(hub))
    job["models"]["draft"] = {"path": FILE, "sha256": sha256_file(tiny_models[FILE])}

    outcome = jobs.run_job(job, host=host, progress=lambda event: None)

    assert isinstance(outcome, jobs.JobFailed)
    assert "SPECBOARD_MODEL_CACHE_DIR must be SPECBOARD_MODELS_DIR" in outcome.error


class CountingHashlib:
    """hashlib for runner.gguf.inspect, counting the digests it starts."""

    def __init__(self) -> None:
        self.digests = 0

    def sha256(self):
        self.digests += 1
        return hashlib.sha256()


@pytest.mark.parametrize("source", ["hub", "local"])
def test_each_model_file_is_hashed_once_per_job_though_the_benchmark_checks_it_too(
    source, hub, host, tiny_models, monkeypatch
):
    counting = CountingHashlib()
    monkeypatch.setattr(gguf_inspect, "hashlib", counting)
    monkeypatch.setattr(gguf_inspect, "_sha_cache", {})

    def no_engine(**_):
        # The benchmark has read both models (runner.benchmark.check_models) by now.
        raise EngineBuildError("no engine on this host")

    monkeypatch.setattr(benchmark, "locate", no_engine)
    local = {"path": FILE, "sha256": hashlib.sha256(tiny_models[FILE].read_bytes()).hexdigest()}
    target = hub_model(hub) if source == "hub" else local

    outcome = jobs.run_job(message(target), host=host, progress=lambda event: None)

    assert outcome == jobs.JobFailed("no engine on this host")
    assert counting.digests == 1


def test_progress_starts_the_job_and_repeats_a_phase_at_most_once_a_second(
    host, tiny_models, fake_benchmark
):
    def measure(progress):
        for done in range(50):
            progress({"phase": "measuring", "done": done, "total": 50})
        progress({"phase": "measuring", "done": 50, "total": 50})

    fake_benchmark.ends = measure
    events: list[dict] = []
    target = {"path": FILE, "sha256": sha256_file(tiny_models[FILE])}

    jobs.run_job(message(target), host=host, progress=events.append)

    assert events == [
        {"phase": "started"},
        {"phase": "measuring", "done": 0, "total": 50},
        {"phase": "measuring", "done": 50, "total": 50},
    ]


@pytest.mark.parametrize(
    ("ending", "outcome"),
    [
        (BenchmarkCancelled("cancelled"), jobs.JobCancelled()),
        (
            EngineCrashedError("engine crashed: exit code 134", "GGML_ASSERT failed"),
            jobs.JobFailed("engine crashed: exit code 134", "GGML_ASSERT failed"),
        ),
        (KeyError("n_ctx"), jobs.JobFailed("internal worker error: KeyError: 'n_ctx'")),
    ],
)
def test_every_way_a_run_ends_is_an_outcome_not_an_exception(
    ending, outcome, host, tiny_models, fake_benchmark
):
    fake_benchmark.ends = ending
    target = {"path": FILE, "sha256": sha256_file(tiny_models[FILE])}

    assert jobs.run_job(message(target), host=host, progress=lambda event: None) == outcome


@pytest.mark.engine
def test_a_hub_job_runs_on_llama_server_and_its_result_names_the_registered_file(hub, host):
    target = hub_model(hub)
    job = message(target, threads=2, protocol={"name": "quick", "runs": 2, "n_predict": 16})
    phases: list[str] = []

    outcome = jobs.run_job(job, host=host, progress=lambda event: phases.append(event["phase"]))

    assert isinstance(outcome, jobs.JobSucceeded), outcome
    assert outcome.result.provenance.models.target.sha256 == target["sha256"]
    assert Path(outcome.result.provenance.models.target.path).name == FILE
    assert phases[:2] == ["started", "downloading"] and "measuring" in phases


def test_a_gpu_host_claims_a_job_with_the_gpus_its_engine_sees(monkeypatch, tmp_path):
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
