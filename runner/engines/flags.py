"""Which command-line flags a llama-server binary accepts, read from its own ``--help``.

A binary given by path (``--server``, ``SPECBOARD_LLAMA_SERVER``) may be another release than the
one the runner composes its flags for (b11434): a flag it does not know makes llama-server exit
at start with a usage error, after the models were fetched and checked. ``missing_flags`` says
so up front, by name. The help text is read once per binary (path, size and modification time).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

from runner.engines.build import Engine
from runner.errors import EngineBuildError

HELP_TIMEOUT_S = 60.0
# A flag as --help lists it: "-sm,   --split-mode {none,layer,row,tensor}", "-devd, --device-draft".
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)")


def flags_in_help(text: str) -> frozenset[str]:
    """Every flag name a help text lists (short and long forms, ``--no-`` variants included)."""
    return frozenset(_FLAG.findall(text))


@functools.cache
def _help_flags(server_path: str, size: int, modified_ns: int) -> frozenset[str]:
    del size, modified_ns  # the cache key: a rebuilt binary is read again
    environment = dict(os.environ)
    library_dir = str(Path(server_path).parent)
    existing = environment.get("LD_LIBRARY_PATH")
    environment["LD_LIBRARY_PATH"] = f"{library_dir}:{existing}" if existing else library_dir
    try:
        finished = subprocess.run(  # noqa: S603 - an argument list, never a shell
            [server_path, "--help"],
            capture_output=True,
            env=environment,
            stdin=subprocess.DEVNULL,
            timeout=HELP_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EngineBuildError(f"cannot read {server_path} --help: {error}") from None
    text = (finished.stdout + finished.stderr).decode("utf-8", "replace")
    flags = flags_in_help(text)
    if finished.returncode != 0 or "--help" not in flags:
        last = next((line for line in reversed(text.splitlines()) if line.strip()), "no output")
        raise EngineBuildError(
            f"{server_path} --help exited with code {finished.returncode}: {last.strip()}"
        )
    return flags


def accepted_flags(engine: Engine) -> frozenset[str]:
    """The flags this engine's llama-server lists in its ``--help``."""
    try:
        status = os.stat(engine.server_path)
    except OSError as error:
        raise EngineBuildError(f"llama-server binary not found: {error}") from None
    return _help_flags(engine.server_path, status.st_size, status.st_mtime_ns)


def missing_flags(engine: Engine, argv: list[str]) -> list[str]:
    """The flags of ``argv`` (the values after them are not flags) that the engine does not list."""
    accepted = accepted_flags(engine)
    asked = [part for part in argv if _FLAG.fullmatch(part)]
    return [flag for flag in dict.fromkeys(asked) if flag not in accepted]


def require_flags(engine: Engine, argv: list[str]) -> None:
    """Raise EngineBuildError, naming them, if the engine does not accept every flag of argv."""
    if missing := missing_flags(engine, argv):
        raise EngineBuildError(
            f"llama-server {engine.server_path} (release {engine.release}) does not accept "
            f"{', '.join(missing)}: this config needs a release that does (b11434 does)"
        )
