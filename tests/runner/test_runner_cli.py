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
