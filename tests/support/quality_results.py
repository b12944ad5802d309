"""Runner results of the quality protocol for the tests: a config and its paired baseline, each
request's output right or wrong on its task as the test says, scored by runner.quality and
checked by the runner's own result model (tests.support.protocol_results)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from runner.config import BenchmarkConfig
from runner.protocols import QualityProtocol, quality
from tests.support.protocol_results import DRAFT, OUTPUT_TOKENS, TARGET, _record, protocol_result


def quality_config(tasks: int = 6, **protocol: Any) -> BenchmarkConfig:
    """A draft-dflash config of the tiny target on the quality protocol."""
    return BenchmarkConfig.model_validate(
        {
            "target_model": TARGET,
            "draft_model": DRAFT,
            "spec_types": ["draft-dflash"],
            "n_max": 4,
            # Each record generates OUTPUT_TOKENS: what the plan asks for (the door checks it).
            "protocol": {
                "name": "quality",
                "tasks": tasks,
                "max_tokens": OUTPUT_TOKENS,
                **protocol,
            },
        }
    )


def output_for(task: quality.QualityTask, correct: bool) -> str:
    """A generated text whose first line is the expected answer, or a wrong one."""
    return f" {task.expected}\n\nQ: next" if correct else f" not {task.expected}\n"


def quality_records(
    config: BenchmarkConfig, correct: list[bool], *, drafted: bool
) -> list[dict[str, Any]]:
    """One record a task, its output right or wrong as ``correct`` says, scored."""
    protocol = config.protocol
    assert isinstance(protocol, QualityProtocol)
    tasks = quality.tasks(seed=protocol.task_seed, count=protocol.tasks, kinds=protocol.kinds)
    return [
        _record(
            index,
            0,
            decode=100.0,
            draft=(16, 12) if drafted else (0, 0),
            quality=quality.score(task, output_for(task, right)),
            # The same text from the same tokens: the output's hash follows its text.
            output_sha256=hashlib.sha256(output_for(task, right).encode()).hexdigest(),
        )
        for index, (task, right) in enumerate(zip(tasks, correct, strict=True))
    ]


def quality_result(
    speculative: list[bool], baseline: list[bool], *, models_dir: Path, **protocol: Any
) -> dict[str, Any]:
    """A checked quality result: the config right on the tasks ``speculative`` marks, its paired
    baseline on those ``baseline`` marks."""
    config = quality_config(len(speculative), **protocol)
    records = quality_records(config, speculative, drafted=True)
    baseline_records = quality_records(config.baseline(), baseline, drafted=False)
    # A task answered otherwise diverged from the baseline's output at its first token.
    for record, reference in zip(records, baseline_records, strict=True):
        if record["output_sha256"] != reference["output_sha256"]:
            record |= {"first_divergence": 0, "divergence": "mismatch", "divergence_margin": None}
    return protocol_result(config, records, baseline_records, models_dir=models_dir)


__all__ = ["DRAFT", "TARGET", "quality_config", "quality_records", "quality_result"]
