"""The memory-bandwidth roofline (runner.roofline): NVML's peak bandwidth with a fake NVML module,
the weight bytes one token reads from real GGUF files' tensor tables (computed again here from
the tensors' types and shapes), the ceiling, fraction and flags, the evidence check, and a real
CPU engine run measured as if on CUDA."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGUFReader, GGUFWriter

from runner import roofline
from runner.benchmark import run_benchmark
from runner.config import parse_config
from runner.engines.build import Engine
from runner.errors import ResultError
from runner.gguf.inspect import inspect_model
from runner.gguf.tiny_models import MTP_MAIN_LAYERS, N_EMBD, N_VOCAB
from runner.provenance import system_info
from runner.results import load_result
from runner.roofline import bandwidth_from, peak_bandwidth, section_roofline
from tests.support.fake_nvml import FakeNvml, fake_gpus, install

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "gpu-results"
H200_BANDWIDTH = 6144 * 3201 * 10**6 * 2 // 8  # NVML's H200 figures: 4.92 TB/s


def test_peak_bandwidth_is_bus_width_times_memory_clock_times_two_transfers():
    assert bandwidth_from(6144, 3201) == 4_916_736_000_000
    assert bandwidth_from(5120, 2619) == 3_352_320_000_000  # H100 SXM: its 3.35 TB/s
    assert roofline.TRANSFERS_PER_MEMORY_CLOCK == 2


def test_peak_bandwidth_is_of_the_first_gpu_cuda_makes_visible(monkeypatch):
    gpus = fake_gpus(2)
    gpus[1].bus_width_bits, gpus[1].max_memory_clock_mhz = 384, 10501  # a GDDR6X card
    install(monkeypatch, FakeNvml(gpus))
    assert peak_bandwidth({}) == H200_BANDWIDTH
    assert peak_bandwidth({"CUDA_VISIBLE_DEVICES": "1,0"}) == 384 * 10501 * 10**6 * 2 // 8
    assert peak_bandwidth({"CUDA_VISIBLE_DEVICES": "-1"}) is None


def test_without_nvml_or_its_figures_there_is_no_bandwidth(monkeypatch):
    install(monkeypatch, None)
    assert peak_bandwidth({}) is None
    install(monkeypatch, FakeNvml(fake_gpus(1), init_fails=True))
    assert peak_bandwidth({}) is None
    broken = FakeNvml(fake_gpus(1))
    broken.nvmlDeviceGetMemoryBusWidth = lambda handle: (_ for _ in ()).throw(
        broken.NVMLError("Not Supported")
    )
    install(monkeypatch, broken)
    assert peak_bandwidth({}) is None
    assert broken.inits == broken.shutdowns == 1
    install(monkeypatch, FakeNvml(fake_gpus(1, bus_width_bits=0)))
    assert peak_bandwidth({}) is None


def test_the_host_records_its_gpu_peak_bandwidth_and_none_without_a_gpu(monkeypatch):
    install(monkeypatch, FakeNvml(fake_gpus(1)))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert system_info()["gpu_peak_bandwidth_bytes_per_second"] == H200_BANDWIDTH
    install(monkeypatch, None)
    assert system_info()["gpu_peak_bandwidth_bytes_per_second"] is None


def _tensor_bytes(tensor) -> int:
    """A tensor's size from its type's block size and bytes per block and its element count."""
    block, block_bytes = GGML_QUANT_SIZES[tensor.tensor_type]
    return math.prod(int(n) for n in tensor.shape) // block * block_bytes


def _expected_bytes_per_token(path: Path, *, main_layers: int | None = None) -> int:
    tensors = GGUFReader(path).tensors
    names = {tensor.name for tensor in tensors}
    total = 0
    for tensor in tensors:
        parts = tensor.name.split(".")
        if main_layers is not None and parts[0] == "blk" and int(parts[1]) >= main_layers:
            continue
        if tensor.name == "token_embd.weight" and "output.weight" in names:
            block, block_bytes = GGML_QUANT_SIZES[tensor.tensor_type]
            total += int(tensor.shape[0]) // block * block_bytes  # one row of n_embd
        else:
            total += _tensor_bytes(tensor)
    return total


@pytest.mark.parametrize(
    "name", ["tiny-qwen3.gguf", "tiny-dflash.gguf", "tiny-dflash-wide.gguf", "tiny-mtp.gguf"]
)
def test_bytes_per_token_are_the_weights_with_one_embedding_row(tiny_models, name):
    path = tiny_models[name]
    main_layers = MTP_MAIN_LAYERS if name == "tiny-mtp.gguf" else None
    info = inspect_model(path)
    assert info.weight_bytes_per_token == _expected_bytes_per_token(path, main_layers=main_layers)
    assert 0 < info.weight_bytes_per_token < info.size_bytes


def test_the_qwen3_fixture_reads_all_but_255_of_its_256_embedding_rows(tiny_models):
    info = inspect_model(tiny_models["tiny-qwen3.gguf"])
    weights = sum(_tensor_bytes(t) for t in GGUFReader(tiny_models["tiny-qwen3.gguf"]).tensors)
    assert info.weight_bytes_per_token == weights - (N_VOCAB - 1) * N_EMBD * 4  # F32 rows


def test_a_model_that_reuses_its_embedding_as_its_head_reads_it_whole(tmp_path):
    path = tmp_path / "tied.gguf"
    writer = GGUFWriter(path, "llama")
    writer.add_uint32("llama.block_count", 1)
    rng = np.random.default_rng(0)
    writer.add_tensor(
        "token_embd.weight", rng.standard_normal((N_VOCAB, N_EMBD)).astype(np.float16)
    )
    writer.add_tensor("blk.0.ffn_up.weight", rng.standard_normal((32, N_EMBD)).astype(np.float32))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tensors = GGUFReader(path).tensors
    expected = N_VOCAB * N_EMBD * 2 + 32 * N_EMBD * 4 + N_EMBD * 4
    assert roofline.weight_bytes_per_token(tensors) == expected == _expected_bytes_per_token(path)


@pytest.mark.parametrize(
    ("decode", "speculative", "flag"),
    [
        (500.0, False, None),
        (1040.0, False, None),  # within the bandwidth figure's own 5% margin
        (1060.0, False, "above_ceiling"),
        (49.0, False, "far_below"),
        (51.0, False, None),
        (1500.0, True, None),  # one target pass yields several tokens
        (10.0, True, None),
    ],
)
def test_the_ceiling_fraction_and_a_baseline_s_flags(decode, speculative, flag):
    figures = section_roofline(
        peak_bandwidth_bytes_per_second=4_000_000_000_000,
        bytes_per_token=4_000_000_000,
        decode_tokens_per_second=decode,
        speculative=speculative,
    )
    assert figures["ceiling_tokens_per_second"] == pytest.approx(1000.0)
    assert figures["fraction"] == pytest.approx(decode / 1000.0)
    assert figures["flag"] == flag


def test_no_bandwidth_or_no_model_size_means_no_roofline():
    base = {"decode_tokens_per_second": 100.0, "speculative": False}
    assert section_roofline(peak_bandwidth_bytes_per_second=None, bytes_per_token=5, **base) is None
    assert section_roofline(peak_bandwidth_bytes_per_second=5, bytes_per_token=None, **base) is None
    assert section_roofline(peak_bandwidth_bytes_per_second=5, bytes_per_token=0, **base) is None


def _paired_h200_result() -> dict:
    for path in sorted(RESULTS.rglob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data.get("schema_version") == 1 and data.get("baseline"):
            return data
    raise AssertionError("no stored H200 result with a baseline")


def _with_roofline(data: dict, *, bandwidth: int, bytes_per_token: int) -> dict:
    """The stored result as if its host had reported bandwidth and its target its bytes per
    token, with each section's roofline computed here from the section's decode mean."""
    data = copy.deepcopy(data)
    data["provenance"]["system"]["gpu_peak_bandwidth_bytes_per_second"] = bandwidth
    for section, speculative in ((data, True), (data["baseline"], False)):
        section["provenance"]["models"]["target"]["weight_bytes_per_token"] = bytes_per_token
        ceiling = bandwidth / bytes_per_token
        fraction = section["summary"]["decode_tokens_per_second"]["mean"] / ceiling
        above = not speculative and fraction > 1.05
        below = not speculative and fraction < 0.05
        section["summary"]["roofline"] = {
            "peak_bandwidth_bytes_per_second": bandwidth,
            "bytes_per_token": bytes_per_token,
            "ceiling_tokens_per_second": ceiling,
            "fraction": fraction,
            "flag": "above_ceiling" if above else "far_below" if below else None,
        }
    return data


def test_a_result_s_roofline_is_checked_against_its_engine_host_model_and_speed():
    stored = _paired_h200_result()
    baseline_decode = stored["baseline"]["summary"]["decode_tokens_per_second"]["mean"]
    honest = _with_roofline(stored, bandwidth=H200_BANDWIDTH, bytes_per_token=5_043_746_432)
    loaded = load_result(copy.deepcopy(honest))
    assert loaded.baseline.summary.roofline.fraction == pytest.approx(
        baseline_decode * 5_043_746_432 / H200_BANDWIDTH
    )
    # A baseline above the ceiling is flagged; a speculative row above it is not.
    fast = _with_roofline(
        stored, bandwidth=H200_BANDWIDTH, bytes_per_token=int(H200_BANDWIDTH / baseline_decode * 2)
    )
    loaded = load_result(copy.deepcopy(fast))
    assert loaded.baseline.summary.roofline.flag == "above_ceiling"
    assert loaded.summary.roofline.fraction > 1 and loaded.summary.roofline.flag is None

    unflagged = copy.deepcopy(fast)
    unflagged["baseline"]["summary"]["roofline"]["flag"] = None
    with pytest.raises(ResultError, match="baseline: summary.roofline.flag is null"):
        load_result(unflagged)
    inflated = copy.deepcopy(honest)
    inflated["summary"]["roofline"]["fraction"] *= 0.9
    with pytest.raises(ResultError, match="summary.roofline.fraction is"):
        load_result(inflated)
    other_host = copy.deepcopy(honest)
    other_host["provenance"]["system"]["gpu_peak_bandwidth_bytes_per_second"] //= 2
    with pytest.raises(ResultError, match="summary.roofline.peak_bandwidth_bytes_per_second"):
        load_result(other_host)


def test_a_cpu_result_has_no_roofline_and_cannot_claim_one():
    honest = _with_roofline(
        _paired_h200_result(), bandwidth=H200_BANDWIDTH, bytes_per_token=5_043_746_432
    )
    on_cpu = copy.deepcopy(honest)
    on_cpu["engine"]["backend"] = on_cpu["provenance"]["engine"]["backend"] = "cpu"
    with pytest.raises(ResultError, match="summary.roofline is given, but .* give null"):
        load_result(copy.deepcopy(on_cpu))
    on_cpu["summary"]["roofline"] = on_cpu["baseline"]["summary"]["roofline"] = None
    assert load_result(on_cpu).summary.roofline is None
    missing = copy.deepcopy(honest)
    missing["baseline"]["summary"]["roofline"] = None
    with pytest.raises(ResultError, match="baseline: summary.roofline is null, but .* give one"):
        load_result(missing)


@pytest.mark.engine
def test_a_real_engine_run_as_if_on_cuda_carries_energy_and_a_checked_roofline(
    monkeypatch, tiny_models
):
    """The CPU engine on the tiny model, described as a CUDA build, with a fake GPU whose energy
    counter rises 1 J per read: the whole path from meter to a validated result."""
    from runner.engines.build import locate

    nvml = FakeNvml(fake_gpus(1))
    original = nvml.nvmlDeviceGetTotalEnergyConsumption

    def rising(handle):
        handle.energy_millijoules += 1000
        return original(handle)

    nvml.nvmlDeviceGetTotalEnergyConsumption = rising
    install(monkeypatch, nvml)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    real = locate()
    engine = Engine(**(real.as_dict() | {"backend": "cuda"}))
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "draft_model": "tiny-qwen3.gguf",
         "spec_types": "draft-simple", "n_max": 4, "threads": 2,
         "protocol": {"name": "quick", "runs": 2, "warmup": 1, "n_predict": 32}}
    )  # fmt: skip
    models_dir = tiny_models["tiny-qwen3.gguf"].parent
    result = run_benchmark(config, models_dir=models_dir, engine=engine, with_baseline=True)
    bytes_per_token = inspect_model(tiny_models["tiny-qwen3.gguf"]).weight_bytes_per_token
    for section in (result, result.baseline):
        assert [r.energy_joules for r in section.requests] == [1.0, 1.0]
        assert section.summary.joules_per_token == pytest.approx(2.0 / 64)
        figures = section.summary.roofline
        assert figures.peak_bandwidth_bytes_per_second == H200_BANDWIDTH
        assert figures.bytes_per_token == bytes_per_token
        assert figures.fraction == pytest.approx(
            section.summary.decode_tokens_per_second.mean * bytes_per_token / H200_BANDWIDTH
        )
    # A tiny model on a CPU is a millionth of an H200's ceiling: the baseline is flagged.
    assert result.baseline.summary.roofline.flag == "far_below"
    assert result.summary.roofline.flag is None
    assert result.summary.joules_per_accepted_token == pytest.approx(
        2.0 / result.summary.draft_accepted
    )
    assert result.provenance.system.gpu_peak_bandwidth_bytes_per_second == H200_BANDWIDTH
