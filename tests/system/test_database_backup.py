"""No data lost to an operator's bad day: the compose `backup` service's own command dumps a
populated PostgreSQL database, the README's restore puts the dump into a fresh database, and a
site on the restored database shows the same board, runs and accounts (read through the API
and the sign-in page by separate processes, one on each database).

PostgreSQL only (CI runs the suite on it: .ci/run); skipped on SQLite. Where the database is
PostgreSQL, pg_dump, pg_restore and createdb must be on PATH: their absence fails the test."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from allauth.account.models import EmailAddress
from django.db import connection

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import LeaderboardEntry, Run
from tests.support.brokers import database_url
from tests.support.seed_kit import SEED_CSV

REPOSITORY = Path(__file__).resolve().parents[2]
PASSWORD = "correct-horse-battery"
BASELINE = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 16}}

# What a site on a database shows: the board and every run through the API, the owner's jobs and
# allowance through their token, and whether the owner signs in with their password.
SNAPSHOT = """
import json, sys, django
django.setup()
from django.test import Client
from leaderboard.models import Job, Run
key = sys.argv[1]
anonymous, owner = Client(), Client(HTTP_AUTHORIZATION=f"Token {key}")
board = anonymous.get("/api/v1/leaderboard", {"source": "all", "include_retired": "true"})
runs = [anonymous.get(f"/api/v1/runs/{pk}").json() for pk in Run.objects.order_by("pk")
        .values_list("pk", flat=True)]
jobs = [owner.get(f"/api/v1/jobs/{pk}").json() for pk in Job.objects.order_by("pk")
        .values_list("pk", flat=True)]
browser = Client()
browser.post("/accounts/login/", {"login": "hedy@example.org", "password": sys.argv[2]})
print(json.dumps({
    "board": [board.status_code, board.json()],
    "runs": runs,
    "jobs": jobs,
    "allowance": owner.get("/api/v1/allowance").json(),
    "signs_in": "_auth_user_id" in browser.session,
}))
"""


def tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is not on PATH (the PostgreSQL client tools are needed here)"
    return found


def postgres_environment(url: str) -> dict[str, str]:
    parts = urlsplit(url)
    return os.environ | {
        "PGHOST": parts.hostname or "127.0.0.1",
        "PGPORT": str(parts.port or 5432),
        "PGUSER": parts.username or "",
        "PGPASSWORD": parts.password or "",
        "PGDATABASE": parts.path.lstrip("/"),
    }


def backup_script(folder: Path) -> str:
    """The compose backup service's command as its shell runs it (compose turns $$ into $),
    writing into `folder` instead of the container's /backups."""
    service = yaml.safe_load((REPOSITORY / "docker-compose.yml").read_text())["services"]["backup"]
    assert service["entrypoint"] == ["sh", "-c"]
    return service["command"][0].replace("$$", "$").replace("/backups", str(folder))


def dump_with_the_backup_service(url: str, folder: Path) -> Path:
    environment = postgres_environment(url) | {"BACKUP_EVERY_HOURS": "24", "BACKUP_KEEP_DAYS": "14"}
    process = subprocess.Popen(
        ["sh", "-c", backup_script(folder)], env=environment, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (dumps := sorted(folder.glob("specboard-*.dump"))):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no dump within a minute"
            time.sleep(0.2)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    assert not list(folder.glob("*.partial"))
    [dump] = dumps
    return dump


def restore_into_a_fresh_database(url: str, dump: Path, name: str) -> str:
    """The README's restore: createdb, then pg_restore of the dump, all or nothing."""
    environment = postgres_environment(url)
    subprocess.run([tool("createdb"), name], env=environment, check=True)
    with dump.open("rb") as archive:
        subprocess.run(
            [tool("pg_restore"), "-d", name, "--no-owner", "--exit-on-error",
             "--single-transaction"],
            stdin=archive, env=environment, check=True, capture_output=True,
        )  # fmt: skip
    return url.rsplit("/", 1)[0] + "/" + name


def site_snapshot(url: str, key: str) -> dict:
    shown = subprocess.run(
        [sys.executable, "-c", SNAPSHOT, key, PASSWORD],
        cwd=REPOSITORY,
        env={k: v for k, v in os.environ.items() if not k.startswith("SPECBOARD_")}
        | {"DATABASE_URL": url, "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "leaderboard.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout.strip().splitlines()[-1])


@pytest.fixture
def postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("backups are of the compose deployment's PostgreSQL (CI runs on it)")
    for name in ("pg_dump", "pg_restore", "createdb", "dropdb"):
        tool(name)


@pytest.fixture
def populated(
    postgresql, transactional_db, settings, models, hardware, enqueued, make_result,
    django_user_model,
):  # fmt: skip
    """A site in use: a measured run and its row, imported self-reported rows, an account with
    a confirmed address, a password and an API token, and that account's job."""
    # The real hasher, so that the processes reading the databases check the password as a
    # deployment does (the tests' fast MD5 hasher is not configured there).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    hedy = django_user_model.objects.create_user("hedy", "hedy@example.org", PASSWORD)
    EmailAddress.objects.create(user=hedy, email="hedy@example.org", verified=True, primary=True)
    key = issue_api_token(user=hedy, name="laptop").key
    job = services.submit_config(owner=hedy, data=BASELINE, hardware_slug=hardware.slug)
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    services.record_result(job_id=job.pk, result=make_result(job.config.key, [120.0, 125.0, 130.0]))
    services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="RTX 4090", uploaded_by=hedy
    )
    assert Run.objects.count() > 20 and LeaderboardEntry.objects.count() > 10
    return key


def test_a_dump_restored_into_a_fresh_database_shows_the_same_board_runs_and_accounts(
    populated, tmp_path
):
    original = database_url()
    fresh = f"{connection.settings_dict['NAME']}_restored_{os.getpid()}"

    dump = dump_with_the_backup_service(original, tmp_path)
    try:
        restored = restore_into_a_fresh_database(original, dump, fresh)
        after = site_snapshot(restored, populated)
        before = site_snapshot(original, populated)
    finally:
        subprocess.run(
            [tool("dropdb"), "--if-exists", "--force", fresh],
            env=postgres_environment(original), check=False,
        )  # fmt: skip

    assert after == before
    status, board = after["board"]
    assert status == 200 and board["count"] > 10
    assert len(after["runs"]) > 20 and all(run.get("id") for run in after["runs"])
    assert after["jobs"][0]["status"] == "succeeded"
    assert after["allowance"]["submissions_left"] >= 0
    assert after["signs_in"] is True
