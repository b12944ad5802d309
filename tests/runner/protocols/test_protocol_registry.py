"""One class per protocol, found from one registry (runner.protocols.PROTOCOLS): each answers
for itself what it plans, costs, labels and checks."""

from __future__ import annotations

import typing

import pytest

from runner import protocols
from runner.config import BenchmarkConfig, parse_config
from tests.support.output_length_results import output_length_config, output_length_result
from tests.support.quality_results import quality_result


def test_the_registry_and_the_config_s_union_hold_the_same_protocols_by_name():
    union = typing.get_args(typing.get_args(protocols.Protocol)[0])
    assert {cls.model_fields["name"].default: cls for cls in union} == protocols.PROTOCOLS
    assert protocols.protocol_class("seed-csv") is None


@pytest.mark.parametrize("name", list(protocols.PROTOCOLS))
def test_every_protocol_plans_what_its_budget_counts_and_labels_its_own_stored_form(name):
    config = parse_config({"target_model": "target.gguf", "protocol": {"name": name}})
    protocol = config.protocol
    plan = protocols.plan_requests(config, vocab_size=5000)
    warmup, measured = protocol.token_costs()
    assert [spec.phase for spec in plan].count("warmup") == warmup[0]
    assert [spec.phase for spec in plan].count("measure") == measured[0]
    assert sum(spec.output_tokens for spec in plan) == warmup[2] + measured[2]
    label = type(protocol).workload_label(config.canonical()["protocol"])
    # The label starts with the protocol's own words: "output length 64–2048 tokens (…)".
    assert label.replace(",", " ").startswith(name.replace("-", " ").split()[0])
    assert protocols.stored_canonical(config.canonical())["protocol"]["name"] == name


def test_labels_tell_the_protocols_apart():
    labels = {
        cls.workload_label(cls().model_dump(mode="json")) for cls in protocols.PROTOCOLS.values()
    }
    assert len(labels) == len(protocols.PROTOCOLS)


def test_only_the_concurrency_protocol_needs_an_engine_that_answers_in_parallel():
    parallel = {name for name, cls in protocols.PROTOCOLS.items() if cls.parallel}
    assert parallel == {"concurrency"}
    with pytest.raises(ValueError, match="the concurrency protocol needs engine llama-server"):
        BenchmarkConfig.model_validate(
            {
                "engine": "llama-cpp-python",
                "target_model": "target.gguf",
                "protocol": {"name": "concurrency"},
            }
        )


def test_a_protocol_s_evidence_hook_refuses_what_its_own_figures_contradict(models_dir):
    config = output_length_config([16, 32])
    result = output_length_result(config, [100.0, 80.0], [50.0, 60.0], models_dir=models_dir)
    assert protocols.OutputLengthProtocol.check_evidence(result) is None
    result["points"][0]["generated_tokens"]["mean"] = 999.0
    assert "generated_tokens" in (protocols.OutputLengthProtocol.check_evidence(result) or "")

    scored = quality_result([True, False, True], [True, True, True], models_dir=models_dir)
    assert protocols.QualityProtocol.check_evidence(scored) is None
    scored["summary"]["quality"]["correct"] = 3
    assert "summary.quality.correct" in (protocols.QualityProtocol.check_evidence(scored) or "")
