"""The runner's command line: `python -m runner ...` as a person runs it (real subprocesses)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from runner.results import BenchmarkResult

REPOSITORY = Path(__file__).parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runner", *args], capture_output=True, text=True, cwd=REPOSITORY
    )


def test_schema_prints_the_result_files_json_schema():
    completed = run_cli("schema")
    assert completed.returncode == 0, completed.stderr
    schema = json.loads(completed.stdout)
    assert schema == BenchmarkResult.model_json_schema()
    assert schema["title"] == "BenchmarkResult"
    assert schema["additionalProperties"] is False
    assert {"schema_version", "config", "config_key", "summary", "requests", "baseline"} <= set(
        schema["properties"]
    )
    assert "BenchmarkConfig" in schema["$defs"] and "RequestRecord" in schema["$defs"]


def test_cli_error_is_one_line_and_non_zero(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "target_model": "t.gguf",
                "draft_model": "d.gguf",
                "spec_types": "draft-dflash",
                "n_max": 16,
            }
        )
    )
    completed = run_cli("run", str(bad), "--out", str(tmp_path / "r.json"))
    assert completed.returncode != 0
    assert completed.stderr.strip().splitlines() == [
        "error: invalid config: n_max: 16 is out of range for draft-dflash: it must lie between "
        "1 and 15 (the engine would silently clamp it)"
    ]
    assert shutil.which("true")  # the test ran a real subprocess, not a stub


def test_budget_prints_the_config_key_and_its_token_budget():
    completed = run_cli("budget", "examples/self-draft.json", "--baseline")
    assert completed.returncode == 0, completed.stderr
    budget = json.loads(completed.stdout)
    assert len(budget["config_key"]) == 16 and budget["requests"] > 0


def _paired(config, records, baseline_records, models_dir: Path) -> BenchmarkResult:
    """A fake paired result whose summary's speedup is the runner's, from its records."""
    from runner.evidence import derived_speedup
    from tests.support.protocol_results import protocol_result

    result = protocol_result(config, records, baseline_records, models_dir=models_dir)
    result["summary"]["speedup"] = derived_speedup(result)
    return BenchmarkResult.model_validate(result)


def test_run_line_says_what_a_categories_speedup_divides(tiny_models):
    from runner.cli import summary_line
    from tests.support.protocol_results import categories_config, category_records

    config = categories_config(["code", "math", "translation"])
    decode = {"code": 180.0, "math": 120.0, "translation": 90.0}
    result = _paired(
        config,
        category_records(config, decode, {"code": 0.9, "math": 0.6, "translation": 0.2}),
        category_records(config.baseline(), dict.fromkeys(decode, 100.0), None),
        next(iter(tiny_models.values())).parent,
    )
    line = summary_line(result)
    # 1.25 = (1.8 x 1.2 x 0.9) ** (1/3), not the pooled 130 / 100.
    assert "speedup 1.25x (geometric mean over 3 categories of mean decode tok/s" in line
    assert "crossover" not in line


def test_run_line_says_a_concurrency_speedup_is_on_aggregate_tok_s_and_its_crossover(tiny_models):
    from runner.cli import summary_line
    from tests.support.protocol_results import concurrency_config, concurrency_records

    config = concurrency_config([1, 2, 4])
    result = _paired(
        config,
        concurrency_records(config, [120.0, 150.0, 150.0], acceptance=0.75),
        concurrency_records(config.baseline(), [100.0, 160.0, 300.0], acceptance=None),
        next(iter(tiny_models.values())).parent,
    )
    line = summary_line(result)
    assert (
        "(geometric mean over 3 concurrency levels of aggregate tok/s over the baseline's)" in line
    )
    assert "crossover at 2 concurrent" in line


def test_gpus_prints_what_a_host_advertises(monkeypatch, capsys):
    from runner.cli import main
    from tests.support.fake_nvml import FakeNvml, install, rtx_3090s

    install(monkeypatch, FakeNvml(rtx_3090s(2)))
    assert main(["gpus"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2x RTX 3090 24GB"
    assert main(["gpus", "--json"]) == 0
    advertised = json.loads(capsys.readouterr().out)
    assert [gpu["name"] for gpu in advertised] == ["RTX 3090", "RTX 3090"]
    install(monkeypatch, None)
    assert main(["gpus"]) == 2
    assert "no NVML here" in capsys.readouterr().err
