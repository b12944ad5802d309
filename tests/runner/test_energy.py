"""Energy per request (runner.energy) from NVML's total energy counter, with a fake NVML module:
which GPUs count, the arithmetic, a counter that goes backwards or is missing, NVML errors, the
split of a concurrent wave, each GPU's share, the summary figures, the run's wiring and the evidence check."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from runner import benchmark, energy
from runner.config import parse_config
from runner.energy import EnergyMeter, energy_figures, joules_between, share_by_tokens
from runner.engines.build import Engine
from runner.errors import ResultError
from runner.gguf.inspect import inspect_model
from runner.protocols import plan_requests
from runner.results import load_result
from tests.support.fake_nvml import FakeNvml, fake_gpus, install

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "gpu-results"


def _meter(monkeypatch, nvml, visible: str | None = None) -> EnergyMeter | None:
    install(monkeypatch, nvml)
    environ = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    return EnergyMeter.open(environ)


def test_the_meter_sums_every_gpu_when_cuda_sees_them_all(monkeypatch):
    nvml = FakeNvml(fake_gpus(2))
    meter = _meter(monkeypatch, nvml)
    assert meter is not None and meter.gpu_count == 2
    before = meter.read()
    nvml.gpus[0].energy_millijoules += 1_500
    nvml.gpus[1].energy_millijoules += 2_750
    assert joules_between(before, meter.read()) == pytest.approx(4.25)


@pytest.mark.parametrize(
    ("visible", "metered"),
    [
        ("1", [1]),
        ("2,0", [2, 0]),
        ("0,0", [0]),  # a GPU named twice is counted once
        ("0,-1,2", [0]),  # CUDA stops at the first entry that names no GPU
        ("1,7,2", [1]),  # ... and at an index past the last GPU
        ("GPU-cccc", [2]),  # a unique prefix of a UUID
        ("GPU-bbbbbbbb-0000-0000-0000-000000000000,0", [1, 0]),
    ],
)
def test_only_the_gpus_cuda_makes_visible_are_metered(monkeypatch, visible, metered):
    nvml = FakeNvml(fake_gpus(3))
    meter = _meter(monkeypatch, nvml, visible)
    assert meter is not None
    before = meter.read()
    for index, gpu in enumerate(nvml.gpus):
        gpu.energy_millijoules += 1000 * (10**index)  # 1 J, 10 J, 100 J
    assert joules_between(before, meter.read()) == pytest.approx(sum(10**i for i in metered))


@pytest.mark.parametrize("visible", ["", "-1", "MIG-5b1b6b4e-aaaa-bbbb", "GPU-zzzz", "GPU-", "9"])
def test_no_visible_whole_gpu_means_no_meter_and_nvml_released(monkeypatch, visible):
    nvml = FakeNvml(fake_gpus(3))
    assert _meter(monkeypatch, nvml, visible) is None
    assert nvml.inits == nvml.shutdowns == 1


def test_without_nvidia_ml_py_or_a_driver_there_is_no_meter(monkeypatch):
    assert _meter(monkeypatch, None) is None
    assert _meter(monkeypatch, FakeNvml(fake_gpus(1), init_fails=True)) is None
    assert energy.read(None) is None


def test_a_gpu_without_the_counter_gives_no_meter_rather_than_a_guess(monkeypatch):
    gpus = fake_gpus(2)
    gpus[1].energy_millijoules = None
    nvml = FakeNvml(gpus)
    assert _meter(monkeypatch, nvml) is None
    assert nvml.shutdowns == nvml.inits == 1


def test_a_read_that_fails_mid_run_loses_that_figure_only(monkeypatch):
    nvml = FakeNvml(fake_gpus(1))
    meter = _meter(monkeypatch, nvml)
    before = meter.read()
    nvml.gpus[0].energy_millijoules = None
    assert meter.read() is None and joules_between(before, meter.read()) is None
    nvml.gpus[0].energy_millijoules = 1_000_500
    assert joules_between(before, meter.read()) == pytest.approx(0.5)


def test_a_counter_that_went_backwards_gives_none_not_a_negative_or_wrapped_figure(monkeypatch):
    nvml = FakeNvml(fake_gpus(2))
    meter = _meter(monkeypatch, nvml)
    before = meter.read()
    nvml.gpus[0].energy_millijoules = 10  # the driver was reloaded: the counter restarted
    nvml.gpus[1].energy_millijoules += 5_000_000  # far more than the other lost
    assert joules_between(before, meter.read()) is None
    assert joules_between((1, 2), (3,)) is None
    assert joules_between(None, (3,)) is None


def test_a_closed_meter_reads_nothing_and_releases_nvml_once(monkeypatch):
    nvml = FakeNvml(fake_gpus(1))
    meter = _meter(monkeypatch, nvml)
    meter.close()
    meter.close()
    assert meter.read() is None
    assert nvml.inits == nvml.shutdowns == 1


def test_a_wave_s_energy_is_shared_in_proportion_to_generated_tokens():
    shares = share_by_tokens(12.0, [100, 200, 300])
    assert shares == pytest.approx([2.0, 4.0, 6.0])
    assert sum(shares) == pytest.approx(12.0)
    assert share_by_tokens(9.0, [0, 0, 0]) == pytest.approx([3.0, 3.0, 3.0])
    assert share_by_tokens(None, [10, 20]) == [None, None]
    assert share_by_tokens(5.0, []) == []


def _record(joules, predicted_n, drafted=0, accepted=0) -> dict:
    return {
        "energy_joules": joules,
        "predicted_n": predicted_n,
        "draft_n": drafted,
        "draft_n_accepted": accepted,
    }


def test_the_summary_figures_are_derived_from_the_requests():
    records = [_record(3.0, 100, drafted=80, accepted=40), _record(5.0, 300, 120, 60)]
    # Energy per generated token, and nothing per accepted draft token: there is no such energy.
    assert energy_figures(records) == pytest.approx(
        {"energy_joules": 8.0, "joules_per_token": 8.0 / 400}
    )
    assert energy.ENERGY_FIGURES == ("energy_joules", "joules_per_token")
    undrafted = energy_figures([_record(2.0, 50)])
    assert undrafted["joules_per_token"] == pytest.approx(0.04)


def test_the_old_per_accepted_token_figure_is_the_whole_energy_over_accepted_tokens():
    records = [_record(3.0, 100, drafted=80, accepted=40), _record(5.0, 300, 120, 60)]
    assert energy.legacy_joules_per_accepted_token(records) == pytest.approx(8.0 / 100)
    assert energy.legacy_joules_per_accepted_token([_record(2.0, 50)]) is None
    assert energy.legacy_joules_per_accepted_token([_record(None, 50, 10, 5)]) is None


def test_one_request_without_energy_leaves_every_summary_figure_null():
    figures = energy_figures([_record(3.0, 100), _record(None, 100)])
    assert figures == dict.fromkeys(energy.ENERGY_FIGURES)
    assert energy_figures([]) == dict.fromkeys(energy.ENERGY_FIGURES)


class _CountingSession:
    """An engine session whose requests burn 2 mJ per generated token on the fake GPU."""

    argv = ["llama-server"]
    command = "llama-server"
    pid = 1
    load_seconds = 0.5

    def __init__(self, gpu) -> None:
        self.gpu = gpu

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def log_text(self) -> str:
        return ""

    def recent_log(self) -> str:
        return ""

    def measure(self, spec) -> dict:
        self.gpu.energy_millijoules += 2 * spec.output_tokens
        return {"wall_ms": 10.0, "predicted_n": spec.output_tokens, "prompt_n": 4}


@pytest.mark.parametrize(("backend", "metered"), [("cuda", True), ("cpu", False)])
def test_the_run_reads_the_meter_around_each_request_on_cuda_only(
    monkeypatch, tiny_models, backend, metered
):
    nvml = FakeNvml(fake_gpus(1))
    install(monkeypatch, nvml)
    session = _CountingSession(nvml.gpus[0])
    monkeypatch.setattr(benchmark, "open_session", lambda *args, **kwargs: session)
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "runs": 2, "warmup": 1}}
    )
    target = inspect_model(tiny_models["tiny-qwen3.gguf"])
    plan = plan_requests(config, vocab_size=target.vocab_size)
    measured = benchmark._run_one_config(
        config,
        engine=Engine(server_path="/x", release="b1", backend=backend),
        target=target,
        draft=None,
        plan=plan,
        progress=benchmark._Progress(len(plan), None),
        phase="measuring",
        should_cancel=None,
        request_timeout_s=5,
        start_timeout_s=5,
    )
    expected = 2 * config.protocol.n_predict / 1000 if metered else None
    assert [record["energy_joules"] for record in measured.records] == [expected] * 2
    # The meter lets NVML go when the session ends (the memory sampler opens it on any host).
    assert nvml.shutdowns == (1 if metered else 0)


def _with_energy(path: Path, joules: list[float]) -> dict:
    """A stored GPU result with energy on each measured request and its derived summary."""
    data = json.loads(path.read_text())
    measured = [r for r in data["requests"] if r["phase"] == "measure"]
    for record, value in zip(measured, joules, strict=False):
        record["energy_joules"] = value
    data["summary"] |= energy_figures(measured)
    return data


def _stored_results() -> list[Path]:
    """The stored H200 results with a paired baseline."""
    found = []
    for path in sorted(RESULTS.glob("h200-*/*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data.get("schema_version") == 1 and data.get("baseline"):
            found.append(path)
    return found


def test_a_result_with_energy_it_derives_loads_and_a_tampered_joules_per_token_is_refused():
    path = _stored_results()[0]
    count = len(json.loads(path.read_text())["requests"])
    data = _with_energy(path, [40.0 + i for i in range(count)])
    loaded = load_result(copy.deepcopy(data))
    assert loaded.summary.joules_per_token == pytest.approx(
        loaded.summary.energy_joules
        / sum(r.predicted_n for r in loaded.requests if r.phase == "measure")
    )
    tampered = copy.deepcopy(data)
    tampered["summary"]["joules_per_token"] *= 0.5
    with pytest.raises(ResultError, match="summary.joules_per_token is"):
        load_result(tampered)
    claimed = copy.deepcopy(data)
    for record in claimed["requests"]:
        record["energy_joules"] = None
    with pytest.raises(ResultError, match="summary.energy_joules is .* give null"):
        load_result(claimed)


def test_an_old_result_with_joules_per_accepted_token_loads_and_a_tampered_one_is_refused():
    path = _stored_results()[0]
    count = len(json.loads(path.read_text())["requests"])
    data = _with_energy(path, [40.0 + i for i in range(count)])
    measured = [r for r in data["requests"] if r["phase"] == "measure"]
    accepted = sum(r["draft_n_accepted"] for r in measured)
    assert accepted
    data["summary"]["joules_per_accepted_token"] = data["summary"]["energy_joules"] / accepted
    assert load_result(copy.deepcopy(data)).summary.joules_per_accepted_token == pytest.approx(
        data["summary"]["energy_joules"] / accepted
    )
    tampered = copy.deepcopy(data)
    tampered["summary"]["joules_per_accepted_token"] *= 0.5
    with pytest.raises(ResultError, match="summary.joules_per_accepted_token is"):
        load_result(tampered)


def test_the_stored_h200_concurrency_file_with_the_old_figure_still_loads():
    stored = json.loads((RESULTS / "h200-run4/call1/8b-dflash12-concurrency.json").read_text())
    assert stored["summary"]["joules_per_accepted_token"] == pytest.approx(0.5245, abs=5e-5)
    loaded = load_result(stored)
    assert loaded.summary.joules_per_token == pytest.approx(0.4385, abs=5e-5)


def test_each_gpus_energy_adds_up_to_the_whole():
    before, after = (1_000, 5_000), (3_500, 6_000)
    assert energy.joules_per_gpu_between(before, after) == [2.5, 1.0]
    assert sum(energy.joules_per_gpu_between(before, after)) == energy.joules_between(before, after)
    # A counter that went backwards: no figure, per GPU either.
    assert energy.joules_per_gpu_between(after, before) is None
    assert energy.add_per_gpu([1.0, 2.0], [0.5, 0.5]) == [1.5, 2.5]
    assert energy.add_per_gpu([1.0, 2.0], None) is None
    assert energy.add_per_gpu(None, [0.5, 0.5]) is None
