"""The runner is plain Python: importing every runner module never loads Django."""

import subprocess
import sys


def test_runner_never_imports_django():
    code = (
        "import importlib, pkgutil, sys, runner\n"
        "for m in pkgutil.walk_packages(runner.__path__, 'runner.'):\n"
        "    if m.name != 'runner.__main__': importlib.import_module(m.name)\n"
        "assert not [n for n in sys.modules if n == 'django' or n.startswith('django.')]\n"
        "print('ok')\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok"
