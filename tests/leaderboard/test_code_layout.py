"""The layout's rules, checked on the source: who may import what (the runner never the service,
the services no read side, the verdicts neither side), who sends tasks, and which modules ask to
be split (a warning)."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterable
from pathlib import Path

import pytest

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
    services = sorted((REPOSITORY / "leaderboard" / "services").rglob("*.py"))
    assert len(services) >= 7
    for path in services:
        found = {name for name in imported_modules(path) if forbidden.match(name)}
        assert not found, f"{path.name} imports {found}"


def test_the_selectors_import_no_services_and_no_pages():
    # Reads never write: what both sides need (the progress description, a file's ModelInfo, the
    # self-reported constants) lives in modules both may import (messaging.progress, models).
    forbidden = re.compile(r"^leaderboard\.(services|tasks|views|api|forms)\b")
    selectors = sorted((REPOSITORY / "leaderboard" / "selectors").rglob("*.py"))
    assert len(selectors) >= 10
    for path in selectors:
        found = {name for name in imported_modules(path) if forbidden.match(name)}
        assert not found, f"{path.name} imports {found}"


# What the reads and the writes both need lives outside both packages, importing neither: the
# progress event's description, the user's allowance (a read the submission service checks) and
# the view of a stored result.
SHARED_BY_BOTH = ("messaging/progress", "allowances", "stored_results")


@pytest.mark.parametrize("module", SHARED_BY_BOTH)
def test_what_services_and_selectors_share_imports_neither(module):
    forbidden = re.compile(r"^leaderboard\.(services|selectors|tasks|views|api|forms)\b")
    path = REPOSITORY / "leaderboard" / f"{module}.py"
    found = {name for name in imported_modules(path) if forbidden.match(name)}
    assert not found, f"{path.name} imports {found}"


def exported(package: str) -> set[str]:
    tree = ast.parse((REPOSITORY / "leaderboard" / package / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"leaderboard/{package}/__init__.py has no __all__")


def test_no_public_name_is_both_a_read_and_a_write():
    # A read a service needs is imported from a module both may import, never re-exported as a
    # service (services.allowance was a read).
    writes, reads = exported("services"), exported("selectors")
    assert "allowance" in reads and "check_allowance" in writes
    assert writes & reads == set()


@pytest.mark.parametrize(
    "package",
    [
        "services",
        "selectors",
        "selectors/board",
        "selectors/answers",
        "selectors/evidence",
        "selectors/jobs",
        "verdicts",
        "views",
        "api/views",
        "messaging",
        "web",
    ],
)
def test_each_package_docstring_names_every_module_it_holds(package):
    # A newcomer reads the package's docstring to find who owns what: none may be left out.
    folder = REPOSITORY / "leaderboard" / package
    docstring = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
    modules = [path.stem for path in folder.glob("*.py") if path.stem != "__init__"]
    assert modules
    missing = [name for name in modules if not re.search(rf"`{name}`|\b{name}\b", docstring)]
    assert not missing, f"leaderboard/{package}/__init__.py does not name {missing}"


def test_only_dispatch_sends_or_revokes_celery_tasks():
    sending = re.compile(r"(?<!dispatch)\.(apply_async|delay|send_task|revoke)\(")
    senders = [
        path.relative_to(REPOSITORY).as_posix()
        for path in SOURCE
        if sending.search(path.read_text())
    ]
    assert senders == ["leaderboard/messaging/dispatch.py"]


def test_the_runner_never_imports_the_service():
    for path in SOURCE:
        if path.parts[len(REPOSITORY.parts)] == "runner":
            assert not any(name.startswith("leaderboard") for name in imported_modules(path)), path


def test_the_verdicts_import_neither_services_nor_selectors_nor_pages():
    # The one verdict layer is read by both sides: the services when a run is recorded, the
    # selectors and pages when it is shown. It must depend on neither.
    forbidden = re.compile(r"^leaderboard\.(services|selectors|views|api|forms|tasks)\b")
    verdicts = sorted((REPOSITORY / "leaderboard" / "verdicts").rglob("*.py"))
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


# Import cycles --------------------------------------------------------------------------------


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runs_at_import(nodes: Iterable[ast.AST]) -> list[ast.Import | ast.ImportFrom]:
    # The imports these statements execute when their module is imported: not those inside
    # functions, nor those under `if TYPE_CHECKING:`, which only the type checker reads.
    found: list[ast.Import | ast.ImportFrom] = []
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found += _runs_at_import(node.orelse)
        else:
            found += _runs_at_import(ast.iter_child_nodes(node))
    return found


def import_graph(folder: Path) -> dict[str, set[str]]:
    """Which of the folder's modules each one imports at module level.

    `from pkg import mod` counts as importing `pkg.mod` where that is a module, else `pkg`;
    importing `a.b.c` also runs the packages above it that the importer is not inside (a module
    inside `a.b` only runs once `a.b`'s own `__init__` has started)."""
    root = folder.parent
    paths = [path for path in sorted(folder.rglob("*.py")) if "migrations" not in path.parts]
    modules = {_module_name(path, root): path for path in paths}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _runs_at_import(ast.parse(path.read_text()).body):
            if isinstance(node, ast.Import):
                imported = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                imported = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for target in imported:
                parts = target.split(".")
                parents = {".".join(parts[:end]) for end in range(1, len(parts))}
                targets |= {
                    p for p in parents if p in modules and not f"{name}.".startswith(f"{p}.")
                }
                targets |= {target} & modules.keys()
        graph[name] = targets - {name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's circles: each strongly connected set of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_no_import_cycle_among_the_runner_s_modules_nor_the_service_s():
    # Imports inside functions are left out: a few break a circle on purpose. None is needed at
    # module level, so every module can be imported first, on its own.
    for folder in ("runner", "leaderboard"):
        graph = import_graph(REPOSITORY / folder)
        assert len(graph) > 30 and sum(map(len, graph.values())) > 60, folder
        assert import_cycles(graph) == [], folder


def test_the_cycle_check_sees_a_circle_through_a_package_but_not_one_inside_a_function(
    tmp_path: Path,
):
    package = tmp_path / "app" / "protocols"
    package.mkdir(parents=True)
    sources = {
        "app/__init__.py": "",
        "app/config.py": "from app.protocols.schema import Schema\n",
        "app/late.py": "def load():\n    from app import config\n",
        "app/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import app.late\n",
        "app/protocols/__init__.py": "from app.protocols.plans import plan\n",
        "app/protocols/schema.py": "Schema = 1\n",
        "app/protocols/plans.py": "from . import schema\nfrom app import config, typed\n",
    }
    for name, text in sources.items():
        (tmp_path / name).write_text(text)

    graph = import_graph(tmp_path / "app")

    assert graph["app.config"] == {"app.protocols", "app.protocols.schema"}
    assert graph["app.protocols.plans"] == {"app.protocols.schema", "app.config", "app.typed"}
    assert graph["app.late"] == set() and graph["app.typed"] == set()
    assert import_cycles(graph) == [["app.config", "app.protocols", "app.protocols.plans"]]
