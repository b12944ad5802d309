"""manage.py import_runner_results (and its old name, import_results): runner result files
recorded as runs on a hardware kind, their provenance saying where they came from."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from leaderboard.models import Run
from tests.support.protocol_results import categories_config
from tests.support.protocol_runs import CATEGORIES, categories_result_file


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def categories_result(make_protocol_result) -> dict:
    return categories_result_file(make_protocol_result)


def test_the_old_name_import_results_still_works(db, tmp_path):
    with pytest.raises(CommandError, match="Expecting value"):
        bad = tmp_path / "bad.json"
        bad.write_text("not json")
        run("import_results", str(bad), "--hardware", "NVIDIA H200")


def test_an_imported_file_is_not_said_to_come_from_the_gpu_pipeline(
    user, models, hardware, categories_result, tmp_path
):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(categories_result))
    call_command(
        "import_runner_results",
        str(path),
        "--hardware",
        "CPU test",
        "--user",
        user.username,
        stdout=StringIO(),
    )
    run = Run.objects.get(config__key=categories_config(CATEGORIES).key)
    stored = json.dumps(run.raw_result.get("provenance")) + json.dumps(
        {f.name: str(getattr(run, f.name)) for f in Run._meta.fields}
    )
    assert "h200_pipeline" not in stored
    assert "import_runner_results" in stored
