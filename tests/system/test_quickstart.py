"""`manage.py quickstart`, what `./specboard up` runs, as a newcomer meets it: the web server
answers before the demo is done, and the demo's jobs, run by the real workers on a real
llama-server, fill the board with the real model's rows (real acceptance, a fidelity grade) and
the tiny models' rows kept apart as test weights.

The stack runs in its own SQLite file, models directory, hardware queue and Redis database.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import redis

from runner.engines.server import free_port
from runner.gguf.real_model import (
    INSTALL_HINT,
    REAL_MODEL_NAME,
    SMOLLM2,
    real_model_installed,
    real_model_placers,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.engine,
    pytest.mark.skipif(not real_model_installed(), reason=f"needs the real model: {INSTALL_HINT}"),
]

REPOSITORY = Path(__file__).parents[2]
BROKER = os.environ.get("SPECBOARD_QUICKSTART_BROKER_URL", "redis://127.0.0.1:6379/13")
FINISHED = ("succeeded", "failed", "cancelled")


def rows(database: Path, sql: str) -> list[sqlite3.Row]:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as connection:
        connection.row_factory = sqlite3.Row
        return connection.execute(sql).fetchall()


def jobs(database: Path) -> list[sqlite3.Row]:
    if not database.exists():
        return []
    try:
        return rows(database, "SELECT id, status, error FROM leaderboard_job ORDER BY id")
    except sqlite3.OperationalError:  # not migrated yet
        return []


@pytest.fixture
def quickstart(tmp_path):
    try:
        redis.Redis.from_url(BROKER).flushdb()
    except redis.ConnectionError:
        pytest.skip(f"the quick start test needs Redis at {BROKER}")
    port = free_port()
    database = tmp_path / "quickstart.sqlite3"
    environment = os.environ | {
        "DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{database}",
        "SPECBOARD_MODELS_DIR": str(tmp_path / "models"),
        "CELERY_BROKER_URL": BROKER,
        "SPECBOARD_HARDWARE_SLUG": "quickstart-test",
    }
    log = (tmp_path / "quickstart.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "quickstart", f"127.0.0.1:{port}"],
        cwd=REPOSITORY,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        yield f"http://127.0.0.1:{port}", database, tmp_path / "quickstart.log"
    finally:
        # Ctrl-C's path: quickstart stops its web server and workers itself.
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def test_quickstart_serves_pages_at_once_and_its_demo_ranks_the_real_model(quickstart):
    site, database, log = quickstart
    deadline = time.monotonic() + 180
    while True:
        try:
            front = httpx.get(f"{site}/", timeout=5)
            if front.status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)
    assert not [job for job in jobs(database) if job["status"] in FINISHED]

    started = time.monotonic()
    while not (demo := jobs(database)) or any(job["status"] not in FINISHED for job in demo):
        assert time.monotonic() - started < 540, log.read_text()[-3000:]
        time.sleep(2)
    demo_seconds = time.monotonic() - started
    assert [(job["id"], job["status"]) for job in demo if job["status"] != "succeeded"] == [], [
        job["error"][-500:] for job in demo
    ]

    entries = rows(
        database,
        "SELECT m.path, c.spec_label, e.acceptance_rate, e.test_weights, e.degenerate, "
        "e.fidelity FROM leaderboard_leaderboardentry e "
        "JOIN leaderboard_config c ON c.id = e.config_id "
        "JOIN leaderboard_modelfile m ON m.id = c.target_id",
    )
    real = {row["spec_label"]: row for row in entries if row["path"] == REAL_MODEL_NAME}
    ngram = next(row for types, row in real.items() if "ngram-simple" in types)
    self_draft = next(row for types, row in real.items() if "draft-simple" in types)
    assert ngram["acceptance_rate"] > 0 and not ngram["test_weights"] and not ngram["degenerate"]
    assert ngram["fidelity"] and self_draft["fidelity"] in (
        "identical",
        "near ties only",
        "mismatch",
        "unclassified",
    )
    assert not self_draft["test_weights"]
    # the real DFlash row: SmolLM2 with the project's own draft, graded, never test weights
    smol = [row for row in entries if row["path"] == SMOLLM2.name]
    dflash = next(row for row in smol if "draft-dflash" in row["spec_label"])
    assert dflash["fidelity"] and not any(row["test_weights"] for row in smol)
    real_names = {name for name, _ in real_model_placers()}
    tiny = [row for row in entries if row["path"] not in real_names]
    assert tiny and all(row["test_weights"] for row in tiny)

    # A front page kept before the results came is served once more while it is computed again
    # behind that request (SPECBOARD_PAGES_REFRESH_BEHIND).
    deadline = time.monotonic() + 30
    while "gemma-3-270m-q4_k_m" not in (board := httpx.get(f"{site}/", timeout=30).text):
        assert time.monotonic() < deadline, board[-2000:]
        time.sleep(0.5)
    print(f"demo: {len(demo)} jobs in {demo_seconds:.0f} s after the first page")
