"""The layout's rules, checked on the source: who may import what (the runner never the service,
the services no read side, the verdicts neither side), who sends tasks, and which modules ask to
be split (a warning)."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
SOURCE = [
    path
    for folder in ("runner", "leaderboard")
    for path in sorted((REPOSITORY / folder).rglob("*.py"))
    if "migrations" not in path.parts
]
# Near this size a module asks to be split along its domain: listed as a warning, never a limit
# to get just under (splitting by count is the counter-example in the house style).
WARN_MODULE_LINES = 400


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


def test_the_selectors_import_no_services_and_no_pages():
    # Reads never write: what both sides need (the progress description, a file's ModelInfo, the
    # self-reported constants) lives in modules both may import (leaderboard.progress, models).
    forbidden = re.compile(r"^leaderboard\.(services|tasks|views|api|forms)\b")
    selectors = sorted((REPOSITORY / "leaderboard" / "selectors").glob("*.py"))
    assert len(selectors) >= 10
    for path in selectors:
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


def test_the_verdicts_import_neither_services_nor_selectors_nor_pages():
    # The one verdict layer is read by both sides: the services when a run is recorded, the
    # selectors and pages when it is shown. It must depend on neither.
    forbidden = re.compile(r"^leaderboard\.(services|selectors|views|api|forms|tasks)\b")
    verdicts = sorted((REPOSITORY / "leaderboard" / "verdicts").glob("*.py"))
    assert len(verdicts) >= 8
    for path in verdicts:
        assert not any(forbidden.match(name) for name in imported_modules(path)), path


def test_modules_near_five_hundred_lines_are_listed_for_a_split_by_domain():
    long = {
        path.relative_to(REPOSITORY).as_posix(): lines
        for path in SOURCE
        if (lines := len(path.read_text().splitlines())) > WARN_MODULE_LINES
    }
    for name, lines in sorted(long.items()):
        warnings.warn(f"{name} has {lines} lines: does it hold more than one domain?", stacklevel=1)
    # Whatever the count, a module holds one domain; none holds two thousand lines of one.
    assert all(lines < 2000 for lines in long.values()), long
