"""What a run's provenance panel shows (`provenance_facts`), read defensively.

Runs differ in what their provenance holds: a worker's result has the system, engine and
models; a seed CSV import has none of them, and an older upload only some. Every fact is text
here ("" where it is missing), so the template needs no lookups that can fail. The recorded
llama-server command comes ready to paste (`runnable`): a built engine's binary finds its
shared libraries (libllama-server-impl.so and the ggml ones, beside it in the build's bin/) only
through LD_LIBRARY_PATH, which the runner sets when it starts the server, so the command gets
the same prefix, computed from the binary's path in the command.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import PurePosixPath

from leaderboard.models import Run


def runnable(command: str) -> str:
    """The command with the LD_LIBRARY_PATH its binary needs, where it names a llama.cpp binary
    by its absolute path (a bare name is found on PATH, where it was installed whole)."""
    # Only the first word matters: a recorded command can be 64 KB, and splitting all of it
    # cost a run page a third of a second.
    lexer = shlex.shlex(command, posix=True)
    lexer.whitespace_split, lexer.commenters = True, ""
    try:
        first = lexer.get_token()
    except ValueError:
        return command
    program = PurePosixPath(first) if first else None
    if program is None or not program.is_absolute() or not program.name.startswith("llama-"):
        return command
    library_dir = str(program.parent)
    return f"LD_LIBRARY_PATH={shlex.quote(library_dir)} {command}"


def _at(data: object, *path: str) -> object:
    """The value at a path of nested provenance mappings, or None where any step is missing."""
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _text_at(data: object, *path: str) -> str:
    """The text at a path of nested provenance mappings, or "" where any step is missing."""
    found = _at(data, *path)
    if isinstance(found, bool) or not isinstance(found, str | int | float):
        return ""
    return str(found)


def _memory_at(data: object, *path: str) -> int | None:
    found = _at(data, *path)
    return found if isinstance(found, int) and not isinstance(found, bool) and found > 0 else None


def provenance_facts(*, run: Run) -> dict[str, object]:
    """What the provenance panel shows of a run: every fact as text ("" where it is missing),
    the command ready to paste ("runnable_command", "" where none was recorded)."""
    p = run.provenance if isinstance(run.provenance, Mapping) else {}
    hardware, config = run.hardware, run.config
    command = _text_at(p, "command")
    return {
        "command": command,
        "runnable_command": runnable(command) if command.strip() else "",
        "engine_backend": _text_at(p, "engine", "backend"),
        "engine_source": _text_at(p, "engine", "source"),
        "target_path": _text_at(p, "models", "target", "path"),
        "target_sha256": _text_at(p, "models", "target", "sha256"),
        "draft_path": _text_at(p, "models", "draft", "path"),
        "draft_sha256": _text_at(p, "models", "draft", "sha256"),
        "gpu": _text_at(p, "system", "gpu_raw_name")
        or _text_at(p, "system", "gpu")
        or hardware.gpu_name,
        "gpu_memory_bytes": _memory_at(p, "system", "gpu_memory_bytes"),
        "driver": _text_at(p, "system", "driver") or hardware.driver,
        "cuda": _text_at(p, "system", "cuda") or hardware.cuda,
        "cpu": _text_at(p, "system", "cpu"),
        "python": _text_at(p, "system", "python"),
        "started_at": _text_at(p, "started_at"),
        "finished_at": _text_at(p, "finished_at"),
        "source": _text_at(p, "source"),
        "uploaded_by": _text_at(p, "uploaded_by"),
        "definition": _text_at(p, "tokens_per_second_definition"),
        "model_column": _text_at(p, "model"),
        "prompt_preview": _text_at(p, "prompt_preview"),
        "config_target_sha256": config.target.sha256 if config.target else "",
        "config_draft": config.draft,
    }
