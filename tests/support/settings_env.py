"""The site's settings as a deployment with a given environment would read them, in this process.

`leaderboard/settings.py` is executed afresh as a module of its own under the environment asked
for (the variables a test is about taken out of this process's first), and os.environ is put
back afterwards; Django's configured settings are never touched. A malformed value stops the
module with ImproperlyConfigured, as it stops the site. Each reading takes milliseconds, where a
fresh Python process importing Django and every app took seconds.
"""

from __future__ import annotations

import importlib.util
import json
import os
from types import ModuleType
from typing import Any

from django.conf import global_settings
from django.core.exceptions import ImproperlyConfigured

from leaderboard import settings as site_settings


def settings_read_with(*, dropping: tuple[str, ...] = (), **environment: str) -> ModuleType:
    """The settings module executed under this process's environment less the variables whose
    names start with `dropping`, plus `environment` (SECRET_KEY is set, as in production)."""
    saved = dict(os.environ)
    chosen = {key: value for key, value in saved.items() if not key.startswith(dropping)}
    os.environ.clear()
    os.environ.update(chosen | {"SECRET_KEY": "x"} | environment)
    try:
        spec = importlib.util.spec_from_file_location(
            "leaderboard_settings_under_test", site_settings.__file__
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        os.environ.clear()
        os.environ.update(saved)


def settings_values(names: list[str], **environment: Any) -> list:
    """The named settings as Django would give them (its default where the module sets none),
    as JSON would carry them (a tuple reads as a list)."""
    module = settings_read_with(**environment)
    values = [getattr(module if hasattr(module, name) else global_settings, name) for name in names]
    return json.loads(json.dumps(values))


def refusal(**environment: Any) -> str:
    """The one line the site stops with under this environment."""
    try:
        settings_read_with(**environment)
    except ImproperlyConfigured as error:
        message = str(error)
        assert message and "\n" not in message, message
        return message
    raise AssertionError(f"the settings accepted {environment}")
