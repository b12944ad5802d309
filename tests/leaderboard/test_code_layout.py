"""The layout's rules, checked on the source: who may import what, who sends tasks, module sizes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
SOURCE = [
    path
    for folder in ("runner", "leaderboard")
    for path in sorted((REPOSITORY / folder).rglob("*.py"))
    if "migrations" not in path.parts
]
MAX_MODULE_LINES = 500


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_services_import_no_tasks_and_no_read_side_code():
    forbidden = re.compile(r"^leaderboard\.(tasks|selectors|views|api|forms)\b")
    services = sorted((REPOSITORY / "leaderboard" / "services").glob("*.py"))
    assert len(services) >= 7
    for path in services:
        found = {name for name in imported_modules(path) if forbidden.match(name)}
        assert not found, f"{path.name} imports {found}"


def test_only_dispatch_sends_or_revokes_celery_tasks():
    sending = re.compile(r"(?<!dispatch)\.(apply_async|delay|send_task|revoke)\(")
    senders = [
        path.relative_to(REPOSITORY).as_posix()
        for path in SOURCE
        if sending.search(path.read_text())
    ]
    assert senders == ["leaderboard/dispatch.py"]


def test_the_runner_never_imports_the_service():
    for path in SOURCE:
        if path.parts[len(REPOSITORY.parts)] == "runner":
            assert not any(name.startswith("leaderboard") for name in imported_modules(path)), path


def test_no_module_is_over_five_hundred_lines():
    long = {
        path.relative_to(REPOSITORY).as_posix(): lines
        for path in SOURCE
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
