"""The door (runner.door): a result that agrees with itself is still refused when it breaks
physics, its own provenance or its protocol's plan on the kind it is recorded under, each rule
by name with the figure; an honest file, and the real H200 files, pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.door import HardwareKind, door_problem
from runner.results import load_result
from runner.roofline import FASTEST_BANDWIDTH
from tests.support.door_files import CONFIG, RULES, door_file

H200 = HardwareKind(label="H200", gpus=("H200",))
GPU_RESULTS = Path(__file__).resolve().parents[2] / "docs" / "gpu-results"


def test_the_honest_file_passes_the_door(models_dir):
    assert door_problem(load_result(door_file(None, models_dir=models_dir)), kind=H200) is None


@pytest.mark.parametrize("rule", RULES)
def test_a_file_breaking_one_rule_is_refused_naming_that_rule(rule, models_dir):
    # load_result is the runner's whole self-consistency check: the file passes it.
    result = load_result(door_file(rule, models_dir=models_dir))

    problem = door_problem(result, kind=H200)

    assert problem is not None and problem.startswith(f"{rule}: ")


def test_a_27b_model_at_10000_tok_s_is_refused_with_its_ceiling(models_dir):
    result = load_result(door_file("physics.decode_above_roofline", models_dir=models_dir))

    problem = door_problem(result, kind=H200)

    # 4.8 TB/s over the 15.2 GB one step reads (and the tiny draft's four passes).
    assert "decode 10000.0 tok/s is 31.67x the ceiling of 315.7 tok/s" in problem
    assert "(4.8 TB/s of H200 over 15,202,740,224 bytes a step at tau 1)" in problem
    assert problem.endswith("the margin is 1.05x")


def test_a_gpu_the_register_lacks_is_held_to_the_fastest_registered_bandwidth(models_dir):
    unknown = HardwareKind(label="GPU A", gpus=("GPU A",))
    assert unknown.bandwidth(split_mode="layer") == FASTEST_BANDWIDTH
    result = load_result(door_file("physics.decode_above_roofline", models_dir=models_dir))

    assert door_problem(result, kind=unknown).startswith("physics.decode_above_roofline: ")


def test_a_row_split_reads_every_gpu_at_once_and_a_layer_split_one_after_another():
    two = HardwareKind(label="2x H200 141GB", gpus=("H200", "H200"))
    assert two.bandwidth(split_mode="row") == 2 * two.bandwidth(split_mode="layer")


def test_energy_below_the_idle_floor_names_the_request_and_the_watts(models_dir):
    result = load_result(door_file("physics.energy_below_idle", models_dir=models_dir))

    problem = door_problem(result, kind=H200)

    assert problem.startswith("physics.energy_below_idle: requests.0: ")
    assert "is 0.075 W, below the idle floor of H200 (40 W" in problem


def test_a_peak_below_the_model_files_held_on_the_gpu_is_refused(models_dir):
    result = load_result(door_file("physics.peak_memory_below_model_bytes", models_dir=models_dir))

    problem = door_problem(result, kind=H200)

    assert "9,000,000,000 is below 90% of the 16,876,316,768 bytes of qwen3-27b" in problem


def test_without_every_layer_on_the_gpu_the_peak_is_not_held_to_the_files(models_dir):
    partial = CONFIG | {"n_gpu_layers": 20}
    result = door_file(
        "physics.peak_memory_below_model_bytes", models_dir=models_dir, config=partial
    )

    assert door_problem(load_result(result), kind=H200) is None


def test_a_synthetic_flag_the_config_lacks_is_refused_naming_the_flag(models_dir):
    result = load_result(door_file("provenance.argv_mismatch", models_dir=models_dir))

    assert door_problem(result, kind=H200) == (
        "provenance.argv_mismatch: the command that ran has --spec-synth-rates 0.9,0.8,0.7,0.6, "
        "which the config does not imply"
    )


def test_another_n_max_or_a_missing_speculative_flag_is_refused(models_dir):
    result = door_file(None, models_dir=models_dir)
    argv = result["provenance"]["argv"]
    at = argv.index("--spec-draft-n-max")
    other_n_max = argv[: at + 1] + ["15"] + argv[at + 2 :]
    no_spec_type = [part for part in argv if part not in ("--spec-type", "draft-simple")]

    problems = [
        door_problem(
            load_result(result | {"provenance": result["provenance"] | {"argv": a}}), kind=H200
        )
        for a in (other_n_max, no_spec_type)
    ]

    assert problems == [
        "provenance.argv_mismatch: the command that ran has --spec-draft-n-max 15, but the config "
        "implies --spec-draft-n-max 4",
        "provenance.argv_mismatch: the command that ran lacks --spec-type draft-simple, which "
        "the config implies",
    ]


def test_a_file_from_an_rtx_3090_is_not_recorded_as_an_h200(models_dir):
    result = load_result(door_file("provenance.system_mismatch", models_dir=models_dir))

    assert door_problem(result, kind=H200) == (
        "provenance.system_mismatch: the file ran on RTX 3090 (1 GPU), but it is recorded under H200"
    )
    assert door_problem(result, kind=HardwareKind(label="RTX 3090", gpus=("RTX 3090",))) is None


def test_a_cpu_host_file_is_not_recorded_on_a_registered_gpu(models_dir):
    result = door_file(None, models_dir=models_dir)
    result["provenance"]["system"] |= {"cpu": "AMD EPYC 9654"}

    assert door_problem(load_result(result), kind=H200) == (
        "provenance.system_mismatch: the file ran on AMD EPYC 9654 with no GPU, but it is "
        "recorded under H200"
    )


EPYC = HardwareKind(label="CPU lab", gpus=("CPU lab",), cpu="AMD EPYC 9654 96-Core Processor")


def on_cpu(result: dict, cpu: str | None) -> dict:
    """The result as if its host had no GPU and the CPU `cpu` (None: it names none)."""
    result["provenance"]["system"] = {"cpu": cpu} if cpu else {}
    return result


def test_a_cpu_host_file_of_another_cpu_model_is_refused_naming_both(models_dir):
    result = on_cpu(door_file(None, models_dir=models_dir), "Intel(R) Xeon(R) Platinum 8480+")

    assert door_problem(load_result(result), kind=EPYC) == (
        "provenance.system_mismatch: the file ran on Intel(R) Xeon(R) Platinum 8480+ with no "
        "GPU, but it is recorded under CPU lab, a CPU host of AMD EPYC 9654 96-Core Processor"
    )


def test_a_cpu_host_file_of_the_kinds_cpu_model_passes_however_it_spells_the_signs(models_dir):
    result = on_cpu(
        door_file(None, models_dir=models_dir), "AMD(R) EPYC(TM)  9654 96-Core Processor"
    )

    assert door_problem(load_result(result), kind=EPYC) is None


def test_a_file_naming_no_system_is_refused_on_a_cpu_kind_and_not_held_to_an_unknown_one(
    models_dir,
):
    result = load_result(on_cpu(door_file(None, models_dir=models_dir), None))

    assert door_problem(result, kind=EPYC) == (
        "provenance.system_mismatch: the file names neither a GPU nor a CPU, but it is recorded "
        "under CPU lab, a CPU host of AMD EPYC 9654 96-Core Processor"
    )
    # A kind that does not know its CPU yet takes it from its first result (the services).
    assert door_problem(result, kind=HardwareKind(label="CPU lab", gpus=("CPU lab",))) is None


def test_a_gpu_file_is_not_recorded_on_a_cpu_kind(models_dir):
    result = load_result(door_file("provenance.system_mismatch", models_dir=models_dir))

    assert door_problem(result, kind=EPYC) == (
        "provenance.system_mismatch: the file ran on RTX 3090 (1 GPU), but it is recorded under "
        "CPU lab"
    )


def test_one_of_the_planned_requests_and_8_of_64_tokens_are_refused(models_dir):
    missing = load_result(door_file("completeness.missing_request", models_dir=models_dir))
    short = load_result(door_file("completeness.short_generation", models_dir=models_dir))

    assert door_problem(missing, kind=H200) == (
        "completeness.missing_request: point 0 measured 1 of the 3 requests the protocol plans"
    )
    assert door_problem(short, kind=H200) == (
        "completeness.short_generation: requests.0 generated 8 of the 64 tokens the protocol "
        "asks for, and its requests may not stop at end-of-sequence"
    )


@pytest.mark.parametrize(
    "name",
    [
        "h200-run2/27b-dflash15-depth.json",
        "h200-run2/8b-nmax8.json",
        "h200-run4/call1/8b-dflash12-concurrency.json",
        "h200-run8/8b-dflash8-output-length.json",
    ],
)
def test_the_real_h200_files_pass_the_door_on_an_h200_and_not_on_a_3090(name):
    result = load_result(json.loads((GPU_RESULTS / name).read_text()))

    assert door_problem(result, kind=H200) is None
    rtx = HardwareKind(label="RTX 3090", gpus=("RTX 3090",))
    assert door_problem(result, kind=rtx).startswith("provenance.system_mismatch: ")
