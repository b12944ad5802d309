"""The result model (runner.results): every stored result validates, dumps as it was, and
anything malformed, non-finite, negative, NUL-bearing or inconsistent is refused in one line."""

import copy
import json
from pathlib import Path

import pytest

from runner.energy import energy_figures
from runner.errors import ResultError
from runner.evidence import in_current_convention, written_before_the_convention
from runner.results import BenchmarkResult, load_result

RESULTS_DIR = Path(__file__).parents[2] / "docs" / "gpu-results"


def stored_results() -> list[Path]:
    """Every JSON file of the H200 runs under docs/gpu-results that is a runner result (it has
    schema_version): written by earlier runners, before fields that came later."""
    found = []
    for path in sorted(RESULTS_DIR.glob("h200-*/*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "schema_version" in data:
            found.append(path)
    return found


# The first H200 run's engine answered every request empty: no decode speed, so no result
# (tests/runner/test_evidence.py proves it is refused); every other stored file is one.
EMPTY_RESPONSES = RESULTS_DIR / "h200-run1" / "8b-dflash12-depth.json"
STORED = [path for path in stored_results() if path != EMPTY_RESPONSES]
WITH_BASELINE = next(p for p in STORED if json.loads(p.read_text())["baseline"] is not None)


@pytest.fixture
def stored() -> dict:
    """A stored H200 result with its baseline, as plain JSON data (a fresh copy per test)."""
    return json.loads(WITH_BASELINE.read_text())


def refusal(data) -> str:
    with pytest.raises(ResultError) as caught:
        load_result(data)
    message = str(caught.value)
    assert message.startswith("invalid result: ") and "\n" not in message
    return message


def test_the_stored_results_are_found():
    assert len(STORED) >= 8


@pytest.mark.parametrize("path", STORED, ids=lambda p: str(p.relative_to(RESULTS_DIR)))
def test_every_stored_result_validates(path):
    result = load_result(path.read_bytes())
    assert isinstance(result, BenchmarkResult)
    assert result.config_key == result.config.key
    assert load_result(json.loads(path.read_text())) == result


@pytest.mark.parametrize("path", STORED, ids=lambda p: str(p.relative_to(RESULTS_DIR)))
def test_a_stored_result_dumps_as_the_dict_it_was_with_decode_in_the_current_convention(path):
    # The H200 files up to run 6 predate runner.stats.decode_rate: they load with their decode
    # figures derived again, and with nothing else changed; later ones are in the convention.
    data = json.loads(path.read_text())
    current = in_current_convention(data) if written_before_the_convention(data) else data
    assert not written_before_the_convention(current)
    result = load_result(data)
    assert result.model_dump(mode="json", exclude_unset=True) == current
    # Same field order too, so a rewritten file reads like the runner's own.
    assert json.dumps(result.model_dump(mode="json", exclude_unset=True)) == json.dumps(current)
    assert json.loads(result.model_dump_json(exclude_unset=True)) == current
    # A file in the current convention dumps as exactly the dict it was.
    assert load_result(current).model_dump(mode="json", exclude_unset=True) == current
    # Fields added after the file was written (fidelity, repeating tails, ...) dump as null.
    assert result.model_dump(mode="json")["summary"]["fidelity"] is None


@pytest.mark.parametrize(
    "path",
    sorted(RESULTS_DIR.glob("h100-dflash-real/*.json")),
    ids=lambda p: str(p.relative_to(RESULTS_DIR)),
)
def test_a_current_runners_gpu_result_loads_and_dumps_as_exactly_the_file(path):
    # The real DFlash pair measured on an H100 by this runner (fidelity graded, energy, latency):
    # nothing is derived again and nothing is dropped.
    data = json.loads(path.read_text())
    assert not written_before_the_convention(data)
    assert load_result(data).model_dump(mode="json", exclude_unset=True) == data
    assert load_result(data).summary.fidelity is not None


def test_an_older_result_without_later_fields_validates_and_dumps_them_as_null(stored):
    del stored["summary"]["harness_overhead_seconds"]
    for record in stored["requests"]:
        del record["ttft_source"]
    del stored["provenance"]["system"]["gpu_raw_name"]
    del stored["provenance"]["engine"]["source"]
    result = load_result(stored)
    assert result.summary.harness_overhead_seconds is None
    assert result.requests[0].ttft_source is None
    dumped = result.model_dump(mode="json")
    assert dumped["summary"]["harness_overhead_seconds"] is None
    assert dumped["provenance"]["system"]["gpu_raw_name"] is None
    assert result.model_dump(mode="json", exclude_unset=True) == in_current_convention(stored)


def test_the_baseline_section_has_no_pairing_fields(stored):
    result = load_result(stored)
    dumped = result.model_dump(mode="json")
    assert "speedup" in dumped["summary"] and "speedup" not in dumped["baseline"]["summary"]
    assert "system" in dumped["provenance"] and "system" not in dumped["baseline"]["provenance"]


def test_results_from_json_text_bytes_and_data_are_the_same(stored):
    text = json.dumps(stored)
    assert load_result(text) == load_result(text.encode()) == load_result(stored)


def test_an_unknown_field_is_refused_wherever_it_is(stored):
    top = copy.deepcopy(stored) | {"comment": "hi"}
    assert refusal(top) == "invalid result: comment: Extra inputs are not permitted"
    stored["requests"][1]["extra"] = 1
    assert "requests.1.extra: Extra inputs are not permitted" in refusal(stored)


def test_a_nan_is_refused_with_its_field_path(stored):
    text = json.dumps(stored).replace(
        f'"mean": {json.dumps(stored["summary"]["decode_tokens_per_second"]["mean"])}',
        '"mean": NaN',
        1,
    )
    assert refusal(text) == (
        "invalid result: summary.decode_tokens_per_second.mean: Input should be a finite number"
    )


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_numbers_are_refused_in_parsed_data_too(stored, value):
    stored["requests"][0]["predicted_ms"] = value
    assert "requests.0.predicted_ms: Input should be a finite number" in refusal(stored)


def test_a_negative_count_is_refused(stored):
    stored["requests"][0]["predicted_n"] = -1
    assert "requests.0.predicted_n: Input should be greater than or equal to 0" in refusal(stored)


def test_an_absurd_count_is_refused(stored):
    stored["summary"]["draft_tokens"] = 10**15
    assert "summary.draft_tokens: Input should be less than or equal to" in refusal(stored)


def test_a_nul_character_in_a_string_is_refused(stored):
    stored["provenance"]["engine_log_tail"] = "server listening\x00"
    assert refusal(stored) == (
        "invalid result: provenance.engine_log_tail: must not contain a NUL character"
    )


def test_an_overlong_string_is_refused(stored):
    stored["provenance"]["engine_log_tail"] = "x" * 100_000
    assert "provenance.engine_log_tail: String should have at most" in refusal(stored)


def test_too_many_draft_positions_are_refused(stored):
    stored["requests"][0]["accepted_per_position"] = [0] * 65
    assert "requests.0.accepted_per_position: List should have at most 64 items" in refusal(stored)


def test_a_config_key_that_is_not_the_configs_is_refused(stored):
    real = stored["config_key"]
    stored["config_key"] = "0123456789abcdef"
    assert refusal(stored) == (
        f"invalid result: config_key: does not match the config, whose key is {real}"
    )


def test_a_config_the_runner_would_refuse_is_refused(stored):
    stored["config"]["n_max"] = 99
    assert "config.n_max: Input should be less than or equal to 64" in refusal(stored)


def test_a_synthetic_flag_that_contradicts_the_config_is_refused(stored):
    stored["synthetic"] = not stored["synthetic"]
    assert "synthetic: is" in refusal(stored)


def test_a_baseline_that_is_not_the_configs_paired_baseline_is_refused(stored):
    stored["baseline"] = copy.deepcopy(
        {k: stored[k] for k in ("config", "config_key", "synthetic", "points", "requests")}
    ) | {
        "summary": stored["baseline"]["summary"],
        "provenance": stored["baseline"]["provenance"],
    }
    assert "baseline: the baseline config is speculative" in refusal(stored)


def test_more_accepted_than_drafted_tokens_is_refused(stored):
    stored["summary"]["draft_accepted"] = stored["summary"]["draft_tokens"] + 1
    assert "summary: draft_accepted" in refusal(stored)


def test_statistics_of_no_values_must_be_all_null(stored):
    stored["summary"]["ttft_ms"]["n"] = 0
    assert "summary.ttft_ms: statistics of no values must all be null" in refusal(stored)


def test_a_timestamp_without_a_time_zone_is_refused(stored):
    stored["provenance"]["started_at"] = "2026-01-01T00:00:00"
    assert "provenance.started_at: must carry its time zone" in refusal(stored)


def test_a_wrong_schema_version_or_a_string_for_a_number_is_refused(stored):
    assert "schema_version" in refusal(stored | {"schema_version": 2})
    stored["requests"][0]["prompt_n"] = "20"
    assert "requests.0.prompt_n: Input should be a valid integer" in refusal(stored)


def test_not_json_and_not_an_object_are_refused_in_one_line():
    assert refusal(b"{not json").startswith("invalid result: Invalid JSON")
    assert "Input should be" in refusal("[1, 2]")


def test_many_errors_are_summarised_after_the_first_few(stored):
    for record in stored["requests"]:
        record["prompt_n"] = -1
    message = refusal(stored)
    assert message.count("prompt_n") == 3 and message.endswith("more)")


def test_an_in_process_engine_is_described_like_any_other(stored):
    engine = {
        "server_path": "(in process)",
        "release": "llama-cpp-python-0.3.36",
        "backend": "cpu",
        "build_flags": [],
        "bench_path": None,
        "source": "python",
    }
    stored["engine"] = stored["provenance"]["engine"] = engine
    assert load_result(stored).engine.server_path == "(in process)"


# Each GPU's peak memory and energy (summary.gpus) and each visible GPU (provenance.system.gpus).


def with_two_gpus(data: dict, *, peaks: tuple[int, int], energies: tuple[float, float] | None):
    """The stored result as if measured on two GPUs: per-GPU peaks, and per-GPU energies that
    split the requests' energy (which they are given) as claimed."""
    measured = [r for r in data["requests"] if r["phase"] == "measure"]
    if energies is not None:
        for record in measured:
            record["energy_joules"] = 40.0
        data["summary"] |= energy_figures(measured)
    data["summary"]["gpus"] = [
        {
            "index": index,
            "peak_memory_bytes": peak,
            "energy_joules": None if energies is None else joules,
        }
        for index, (peak, joules) in enumerate(zip(peaks, energies or (None, None), strict=True))
    ]
    data["provenance"]["system"]["gpus"] = [
        {
            "index": i,
            "name": "RTX 3090",
            "raw_name": "NVIDIA GeForce RTX 3090",
            "memory_bytes": 24 * 2**30,
        }
        for i in range(2)
    ]
    return data


def test_a_result_records_each_gpus_peak_memory_and_energy(stored):
    total = stored["summary"]["peak_memory_bytes"]
    whole = 40.0 * sum(1 for r in stored["requests"] if r["phase"] == "measure")
    data = with_two_gpus(stored, peaks=(total - 10**9, 10**9), energies=(whole * 0.7, whole * 0.3))
    result = load_result(data)
    assert [gpu.peak_memory_bytes for gpu in result.summary.gpus] == [total - 10**9, 10**9]
    assert sum(gpu.energy_joules for gpu in result.summary.gpus) == pytest.approx(
        result.summary.energy_joules
    )
    assert [gpu.name for gpu in result.provenance.system.gpus] == ["RTX 3090", "RTX 3090"]
    assert load_result(result.model_dump(mode="json")) == result


def test_a_result_recorded_before_the_per_gpu_figures_still_loads(stored):
    result = load_result(stored)
    assert result.summary.gpus is None and result.provenance.system.gpus is None
    assert "gpus" not in result.model_dump(mode="json", exclude_unset=True)["summary"]


def test_a_total_peak_the_gpus_peaks_cannot_make_is_refused(stored):
    total = stored["summary"]["peak_memory_bytes"]
    # Above the GPUs' peaks together, or below the largest one's.
    assert "does not lie between" in refusal(
        with_two_gpus(copy.deepcopy(stored), peaks=(total // 4, total // 4), energies=None)
    )
    assert "does not lie between" in refusal(
        with_two_gpus(stored, peaks=(total + 1, 5), energies=None)
    )


def test_gpu_energies_that_do_not_add_up_to_the_sections_are_refused(stored):
    whole = 40.0 * sum(1 for r in stored["requests"] if r["phase"] == "measure")
    total = stored["summary"]["peak_memory_bytes"]
    message = refusal(with_two_gpus(stored, peaks=(total, 1), energies=(whole, whole * 0.1)))
    assert "the GPUs' energies add up to" in message


def test_gpus_numbered_out_of_order_are_refused(stored):
    total = stored["summary"]["peak_memory_bytes"]
    data = with_two_gpus(copy.deepcopy(stored), peaks=(total, 1), energies=None)
    data["summary"]["gpus"][1]["index"] = 0
    assert "numbered 0, 1" in refusal(data)
    data = with_two_gpus(stored, peaks=(total, 1), energies=None)
    data["provenance"]["system"]["gpus"][0]["index"] = 1
    assert "numbered 0, 1" in refusal(data)
