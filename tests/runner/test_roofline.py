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
from runner.compatibility import kv_bytes_per_token
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
        (1060.0, True, "above_ceiling"),  # its own ceiling counts the tokens a step yields
        (10.0, True, None),  # drafting may cost more than it yields: no CPU suspicion
    ],
)
def test_the_ceiling_fraction_and_the_flags(decode, speculative, flag):
    figures = section_roofline(
        peak_bandwidth_bytes_per_second=4_000_000_000_000,
        target_weight_bytes=4_000_000_000,
        tokens_per_second=decode,
        speculative=speculative,
    )
    assert figures["ceiling_tokens_per_second"] == pytest.approx(1000.0)
    assert figures["fraction"] == pytest.approx(decode / 1000.0)
    assert figures["flag"] == flag


def test_no_bandwidth_or_no_model_size_means_no_roofline():
    base = {"tokens_per_second": 100.0, "speculative": False}
    assert (
        section_roofline(peak_bandwidth_bytes_per_second=None, target_weight_bytes=5, **base)
        is None
    )
    assert (
        section_roofline(peak_bandwidth_bytes_per_second=5, target_weight_bytes=None, **base)
        is None
    )
    assert (
        section_roofline(peak_bandwidth_bytes_per_second=5, target_weight_bytes=0, **base) is None
    )


# The 8B shape of the stored H200 runs (Qwen3 8B): 36 layers, 32 query heads, 8 K/V heads of 128.
QWEN3_8B = {"layers": 36, "heads": 32, "kv_heads": 8, "head_dim": 128, "embd": 4096}
W_8B = 4_691_233_024  # the stored 8B target's weight_bytes_per_token (Q4_K_M)
W_DFLASH = 1_114_313_728  # its DFlash draft's (Q8_0)
H200_NVML = 4_814_304_000_000  # the stored file's host: 6016 bits x 3201 MHz x 2 / 8


def _qwen3_8b_header(path: Path) -> Path:
    """A GGUF file with the 8B shape's attention metadata and one small tensor."""
    writer = GGUFWriter(path, "qwen3")
    writer.add_uint32("qwen3.block_count", QWEN3_8B["layers"])
    writer.add_uint32("qwen3.embedding_length", QWEN3_8B["embd"])
    writer.add_uint32("qwen3.attention.head_count", QWEN3_8B["heads"])
    writer.add_uint32("qwen3.attention.head_count_kv", QWEN3_8B["kv_heads"])
    writer.add_uint32("qwen3.attention.key_length", QWEN3_8B["head_dim"])
    writer.add_uint32("qwen3.attention.value_length", QWEN3_8B["head_dim"])
    writer.add_tensor("output_norm.weight", np.ones(QWEN3_8B["embd"], dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_kv_cache_at_36k_context_on_the_8b_shape_is_more_than_its_weights(tmp_path):
    info = inspect_model(_qwen3_8b_header(tmp_path / "qwen3-8b-shape.gguf"))
    # 36 layers x 8 K/V heads x (128 key + 128 value) elements per token of context.
    assert info.kv_elements_per_token == 36 * 8 * 256 == 73_728
    per_token = kv_bytes_per_token(
        info.kv_elements_per_token, cache_type_k="f16", cache_type_v="f16"
    )
    assert per_token == 147_456
    kv = round(per_token * 36_864)
    assert kv == 5_435_817_984 and kv > W_8B  # 5.44 GB against 4.69 GB of weights
    figures = section_roofline(
        peak_bandwidth_bytes_per_second=H200_NVML,
        target_weight_bytes=W_8B,
        kv_bytes_per_step=kv,
        tokens_per_second=100.0,
        speculative=False,
    )
    # Today's target-only ceiling would be 1026 tok/s; the step reads both: 475 tok/s.
    assert figures["bytes_per_step"] == W_8B + kv
    assert figures["ceiling_tokens_per_second"] == pytest.approx(H200_NVML / (W_8B + kv))
    assert figures["ceiling_tokens_per_second"] == pytest.approx(475.4, abs=0.1)


def test_a_quantized_cache_is_read_at_its_own_bytes_as_the_memory_estimate_counts_it():
    assert kv_bytes_per_token(73_728, cache_type_k="q8_0", cache_type_v="q8_0") == 73_728 * 34 / 32
    assert (
        kv_bytes_per_token(73_728, cache_type_k="f16", cache_type_v="q4_0")
        == 73_728 * (2 + 18 / 32) / 2
    )


def test_dflash_adds_one_block_pass_of_its_draft_and_a_draft_model_one_pass_per_token():
    dflash = roofline.draft_bytes_per_step(
        ["draft-dflash"], n_max=12, draft_bytes_per_pass=W_DFLASH, drafted_per_step=11.4
    )
    assert dflash == W_DFLASH  # a whole block in one pass, whatever n_max
    # A draft model drafts token by token: n_max passes where nothing measured them ...
    simple = roofline.draft_bytes_per_step(
        ["draft-simple"], n_max=8, draft_bytes_per_pass=1_000, drafted_per_step=None
    )
    assert simple == 8 * 1_000
    # ... else one pass per drafted token (p_min stops it early).
    measured = roofline.draft_bytes_per_step(
        ["draft-simple"], n_max=8, draft_bytes_per_pass=1_000, drafted_per_step=3.5
    )
    assert measured == 3_500
    none = {"n_max": 8, "draft_bytes_per_pass": None, "drafted_per_step": 3.0}
    assert roofline.draft_bytes_per_step(["ngram-simple"], **none) == 0
    assert roofline.draft_bytes_per_step([], **none) == 0
    # Unknown bytes are not guessed: draft-mtp's head, a draft model without its size.
    assert roofline.draft_bytes_per_step(["draft-mtp"], **none) is None
    assert roofline.draft_bytes_per_step(["draft-simple"], **none) is None


def test_dflash_at_one_request_is_held_against_its_own_step_not_the_target_only_ceiling():
    """The stored H200 file's level 1: 448.26 tok/s per-request decode at tau 6.22, DFlash."""
    tau = 6.219512195121951
    target_only = section_roofline(
        peak_bandwidth_bytes_per_second=H200_NVML,
        target_weight_bytes=W_8B,
        tokens_per_second=448.26324702004655,
        speculative=True,
    )
    assert target_only["fraction"] == pytest.approx(0.437, abs=5e-4)  # what the site showed
    own = section_roofline(
        peak_bandwidth_bytes_per_second=H200_NVML,
        target_weight_bytes=W_8B,
        draft_bytes_per_step=W_DFLASH,
        tokens_per_step=tau,
        tokens_per_second=448.26324702004655,
        speculative=True,
    )
    assert own["ceiling_tokens_per_second"] == pytest.approx(H200_NVML * tau / (W_8B + W_DFLASH))
    assert own["fraction"] == pytest.approx(0.087, abs=5e-4)
    assert own["bytes_per_token"] == round((W_8B + W_DFLASH) / tau)


def _concurrency_h200() -> dict:
    return json.loads(
        (RESULTS / "h200-run4" / "call1" / "8b-dflash12-concurrency.json").read_text()
    )


def test_a_concurrency_level_s_aggregate_is_held_against_one_batched_step_for_all_its_streams():
    stored = _concurrency_h200()
    derived = roofline.derived_roofline(stored, run=stored)
    levels = {level["concurrency"]: level for level in derived["levels"]}
    assert sorted(levels) == [1, 2, 4, 8, 16]
    tau = stored["summary"]["tau"]
    for point in stored["points"]:
        level = levels[point["concurrency"]]
        # The weights (target and one DFlash pass) once per batched step, for B streams.
        assert level["streams"] == point["concurrency"] and level["rate"] == "aggregate"
        assert level["bytes_per_step"] == W_8B + W_DFLASH
        ceiling = H200_NVML * point["concurrency"] * tau / (W_8B + W_DFLASH)
        assert level["ceiling_tokens_per_second"] == pytest.approx(ceiling)
        assert level["fraction"] == pytest.approx(
            point["aggregate_tokens_per_second"]["mean"] / ceiling
        )
        # 512 prompt tokens and 256 generated: steps read 640 tokens of context on average.
        assert level["context_tokens"] == 640.0
    # The file's models predate their K/V size: the cache is unknown, left out, never 0.
    assert levels[1]["kv_bytes_per_step"] is None
    assert derived["fraction"] == levels[1]["fraction"] == pytest.approx(0.0617, abs=5e-5)
    # Against the single-stream target-only ceiling, level 16's 547 tok/s read as 0.53 of it.
    assert levels[16]["fraction"] < 0.01


def test_a_concurrency_baseline_is_never_suspected_of_a_cpu_fallback_at_many_streams():
    stored = _concurrency_h200()
    baseline = stored["baseline"] | {"engine": stored["engine"]}
    baseline["provenance"] = baseline["provenance"] | {"system": stored["provenance"]["system"]}
    derived = roofline.derived_roofline(baseline, run=baseline)
    levels = {level["concurrency"]: level for level in derived["levels"]}
    assert levels[16]["fraction"] < roofline.FAR_BELOW_FRACTION
    assert levels[16]["flag"] is None and derived["flag"] is None
    assert levels[1]["tokens_per_step"] == 1.0 and levels[1]["draft_bytes_per_step"] == 0


def test_the_kv_cache_of_the_target_and_of_a_draft_model_counts_at_the_requests_context():
    stored = _concurrency_h200()
    section = copy.deepcopy(stored)
    section["config"] |= {"spec_types": ["draft-simple"], "n_max": 12, "spec_synth_rates": None}
    models = section["provenance"]["models"]
    models["target"]["kv_elements_per_token"] = 73_728
    models["draft"]["kv_elements_per_token"] = 1_000
    derived = roofline.derived_roofline(section, run=section)
    level = derived["levels"][1]  # concurrency 2
    records = [r for r in section["requests"] if r["phase"] == "measure" and r["point"] == 1]
    drafted = sum(r["draft_n"] for r in records) / sum(r["verify_steps"] for r in records)
    assert level["kv_bytes_per_step"] == round(2 * 73_728 * 2 * 640)
    # Each drafted token is a pass of the draft model: its weights once, both streams' caches.
    assert level["draft_bytes_per_step"] == round(drafted * (W_DFLASH + 2 * 1_000 * 2 * 640))
    assert (
        level["bytes_per_step"] == W_8B + level["kv_bytes_per_step"] + level["draft_bytes_per_step"]
    )


def _paired_h200_result() -> dict:
    for path in sorted(RESULTS.glob("h200-*/*.json")):
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


def test_a_stored_target_only_roofline_is_checked_as_written_and_loads_derived_per_step():
    """Files written before the step was counted carry the target-only form: the door checks it
    against that form's own derivation; what is shown is the step form, derived afresh."""
    stored = _paired_h200_result()
    honest = _with_roofline(stored, bandwidth=H200_BANDWIDTH, bytes_per_token=5_043_746_432)
    load_result(copy.deepcopy(honest))
    for section in (honest, honest["baseline"]):
        figures = roofline.derived_roofline(section, run=honest)
        assert figures["bytes_per_step"] == figures["target_weight_bytes"] == 5_043_746_432
        assert figures["fraction"] == pytest.approx(
            section["summary"]["decode_tokens_per_second"]["mean"]
            * figures["bytes_per_step"]
            / (H200_BANDWIDTH * figures["tokens_per_step"])
        )
    tau = honest["summary"]["tau"]
    assert roofline.derived_roofline(honest, run=honest)["tokens_per_step"] == pytest.approx(tau)
    # A baseline above the ceiling is flagged in either form.
    baseline_decode = stored["baseline"]["summary"]["decode_tokens_per_second"]["mean"]
    fast = _with_roofline(
        stored, bandwidth=H200_BANDWIDTH, bytes_per_token=int(H200_BANDWIDTH / baseline_decode * 2)
    )
    loaded = load_result(copy.deepcopy(fast))
    assert loaded.baseline.summary.roofline.flag == "above_ceiling"

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


def test_a_step_form_roofline_is_checked_term_by_term_and_level_by_level():
    stored = _concurrency_h200()
    stored["summary"]["roofline"] = roofline.derived_roofline(stored, run=stored)
    assert load_result(copy.deepcopy(stored)).summary.roofline.levels[4].concurrency == 16
    inflated = copy.deepcopy(stored)
    inflated["summary"]["roofline"]["levels"][2]["fraction"] *= 2
    with pytest.raises(ResultError, match="summary.roofline.levels.2.fraction is"):
        load_result(inflated)
    no_draft = copy.deepcopy(stored)
    no_draft["summary"]["roofline"]["draft_bytes_per_step"] = 0
    with pytest.raises(ResultError, match="summary.roofline.draft_bytes_per_step is 0"):
        load_result(no_draft)
    single_stream = copy.deepcopy(stored)
    single_stream["summary"]["roofline"]["rate"] = "decode"
    with pytest.raises(ResultError, match="summary.roofline.rate is decode"):
        load_result(single_stream)
    # The old form with a level list is not the old form: checked as the step form, refused.
    mixed = copy.deepcopy(stored)
    mixed["summary"]["roofline"] = roofline.legacy_roofline(stored, run=stored) | {
        "levels": stored["summary"]["roofline"]["levels"]
    }
    with pytest.raises(ResultError, match="summary.roofline"):
        load_result(mixed)


def test_the_stored_h200_concurrency_file_loads_with_its_roofline_derived_per_step():
    stored = _concurrency_h200()
    # As written: the target-only form, decode pooled over every level.
    assert stored["summary"]["roofline"]["fraction"] == pytest.approx(0.1146, abs=5e-5)
    load_result(copy.deepcopy(stored))
    figures = roofline.derived_roofline(stored, run=stored)
    assert figures["rate"] == "aggregate" and len(figures["levels"]) == 5
    assert figures["fraction"] == pytest.approx(0.0617, abs=5e-5)
    baseline = stored["baseline"] | {"engine": stored["engine"]}
    baseline["provenance"] = baseline["provenance"] | {"system": stored["provenance"]["system"]}
    levels = roofline.derived_roofline(baseline, run=baseline)["levels"]
    assert levels[0]["fraction"] == pytest.approx(0.1867, abs=5e-5)


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
    info = inspect_model(tiny_models["tiny-qwen3.gguf"])
    weights = info.weight_bytes_per_token
    for section in (result, result.baseline):
        assert [r.energy_joules for r in section.requests] == [1.0, 1.0]
        assert section.summary.joules_per_token == pytest.approx(2.0 / 64)
        figures = section.summary.roofline
        assert figures.peak_bandwidth_bytes_per_second == H200_BANDWIDTH
        measured = [r for r in section.requests if r.phase == "measure"]
        context = sum(r.predicted_n * (r.prompt_n + r.predicted_n / 2) for r in measured) / sum(
            r.predicted_n for r in measured
        )
        kv = info.kv_elements_per_token * 2 * context  # f16 keys and values
        assert figures.context_tokens == pytest.approx(context)
        assert figures.kv_bytes_per_step == round(kv)
        assert figures.fraction == pytest.approx(
            section.summary.decode_tokens_per_second.mean
            * figures.bytes_per_step
            / (H200_BANDWIDTH * figures.tokens_per_step)
        )
    # The target as its own draft, token by token: one pass of it per drafted token.
    drafted = result.summary.draft_tokens / result.summary.verify_steps
    assert result.summary.roofline.draft_bytes_per_step == round(drafted * (weights + round(kv)))
    assert result.summary.roofline.tokens_per_step == pytest.approx(result.summary.tau)
    assert result.baseline.summary.roofline.bytes_per_step == weights + round(kv)
    # A tiny model on a CPU is a millionth of an H200's ceiling: the baseline is flagged.
    assert result.baseline.summary.roofline.flag == "far_below"
    assert result.summary.roofline.flag is None
    # There is no energy of an accepted draft token: new results do not carry one.
    assert result.summary.joules_per_accepted_token is None
    assert result.provenance.system.gpu_peak_bandwidth_bytes_per_second == H200_BANDWIDTH
