"""What a newcomer reads when `./specboard up` (manage.py quickstart) has started: the address
and the demo sign-in as the last lines, the workers' banners and the web server's requests in
log files under var/log/.

The stack runs in its own SQLite file, models directory, hardware queue and Redis database, with
a llama-server path that does not exist, so no engine is built and the demo's jobs fail at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import redis

from runner.engines.server import free_port

pytestmark = pytest.mark.e2e

REPOSITORY = Path(__file__).parents[2]
BROKER = os.environ.get("SPECBOARD_QUICKSTART_OUTPUT_BROKER_URL", "redis://127.0.0.1:6379/10")


def everything_written(output: Path) -> str:
    logs = REPOSITORY / "var" / "log"
    names = ("web.log", "db-worker.log", "gpu-worker.log")
    return output.read_text() + "".join(
        (logs / name).read_text(errors="replace") for name in names if (logs / name).exists()
    )


def test_quickstart_ends_its_start_up_with_the_address_and_the_demo_sign_in(tmp_path):
    try:
        redis.Redis.from_url(BROKER).flushdb()
    except redis.ConnectionError:
        pytest.skip(f"this test needs Redis at {BROKER}")
    for stale in (REPOSITORY / "var" / "log").glob("*worker.log"):
        stale.unlink()
    port = free_port()
    environment = os.environ | {
        "DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'quickstart.sqlite3'}",
        "SPECBOARD_MODELS_DIR": str(tmp_path / "models"),
        "SPECBOARD_LLAMA_SERVER": str(tmp_path / "no-llama-server"),
        "CELERY_BROKER_URL": BROKER,
        "SPECBOARD_HARDWARE_SLUG": "quickstart-output-test",
    }
    output = tmp_path / "terminal.txt"
    with output.open("wb") as terminal:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "quickstart", f"127.0.0.1:{port}", "--skip-engine"],
            cwd=REPOSITORY,
            env=environment,
            stdout=terminal,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 180
            # Both workers have said they are ready (wherever they said it) and the site answers.
            while everything_written(output).count(" ready.") < 2:
                assert process.poll() is None and time.monotonic() < deadline, output.read_text()
                time.sleep(0.5)
            assert httpx.get(f"http://127.0.0.1:{port}/", timeout=30).status_code == 200
            time.sleep(2)
            lines = [line for line in output.read_text().splitlines() if line.strip()]
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()

    assert lines[-2:] == [
        f"Specboard on http://127.0.0.1:{port}/",
        "Sign in as demo / specboard-demo to submit.",
    ], lines[-15:]
    assert not any("celery@" in line for line in lines), lines
