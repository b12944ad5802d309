"""The terminal client against a running site (pytest-django's live server): `python -m runner
submit` queues a job and, with --wait, follows it to its result row; `python -m runner upload`
records a self-measured result. A real token made the site's way; a bad one gets the API's
message and a non-zero exit; the token never appears in what the client prints. A site that
answers something other than a JSON object, or a redirect, is one error that says so."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.db import OperationalError

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Job, Run
from runner import client
from runner.config import BenchmarkConfig
from tests.support import fixtures as shared

# The service's fixtures (tests/leaderboard and tests/system get them from their conftest files).
enqueued, hardware, make_result, models = (
    shared.enqueued, shared.hardware, shared.make_result, shared.models
)  # fmt: skip
site_settings, static_root, tiny_models, user = (
    shared.site_settings, shared.static_root, shared.tiny_models, shared.user
)  # fmt: skip

REPOSITORY = Path(__file__).resolve().parents[2]
CONFIG = {
    "target_model": "tiny-qwen3.gguf",
    "protocol": {"name": "quick", "n_predict": 16, "runs": 4},
}


@pytest.fixture
def site(live_server, user, models, hardware, enqueued):
    """The live site, a hardware kind it serves, and a token made as /account/ makes them."""
    return {
        "url": live_server.url,
        "hardware": hardware,
        "user": user,
        "token": issue_api_token(user=user, name="terminal").key,
    }


@pytest.fixture
def home(tmp_path) -> Path:
    """A HOME of the test's own, so nobody's real client.toml is read."""
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def environment(home: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SPECBOARD_", "DJANGO_"))}
    return base | {"HOME": str(home)} | extra


def write_json(folder: Path, name: str, data: dict) -> str:
    path = folder / name
    path.write_text(json.dumps(data))
    return str(path)


def runner_command(*args: str, home: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=REPOSITORY,
        env=environment(home, **extra),
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_token_kept_out(token: str, *outputs: str) -> None:
    for output in outputs:
        assert token not in output
        assert token[12:] not in output


def test_submit_queues_a_job_for_the_tokens_owner_and_says_where_it_is(site, home, tmp_path):
    config = write_json(tmp_path, "config.json", CONFIG)
    done = runner_command(
        "submit", config, "--site", site["url"], home=home, SPECBOARD_TOKEN=site["token"]
    )

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    job = Job.objects.get(auto_scheduled=False)
    assert job.owner == site["user"] and job.hardware == site["hardware"]
    assert done.stdout.startswith(f"job {job.pk} queued: config {job.config.key} on ")
    assert f"{site['url']}/jobs/{job.pk}/" in done.stdout
    assert_token_kept_out(site["token"], done.stdout, done.stderr)


def test_a_token_given_as_a_flag_still_works_and_is_warned_about(site, home, tmp_path):
    """A command line is in the process list, which every local user can read."""
    config = write_json(tmp_path, "config.json", CONFIG)
    done = runner_command(
        "submit", config, "--site", site["url"], "--token", site["token"], home=home
    )

    assert done.returncode == 0, done.stderr
    assert Job.objects.filter(owner=site["user"], auto_scheduled=False).count() == 1
    [warning] = done.stderr.strip().splitlines()
    assert warning.startswith("warning: --token puts the key in this machine's process list")
    assert "SPECBOARD_TOKEN" in warning and "client.toml" in warning
    assert_token_kept_out(site["token"], done.stdout, done.stderr)


def recorded(write, **arguments) -> None:
    """A service write from this thread while the live server's thread reads the same in-memory
    SQLite database, which then answers "table is locked" (a real db worker has its own
    connection to a file or PostgreSQL); the write is one transaction, so it is tried again."""
    for _ in range(50):
        try:
            write(**arguments)
            return
        except OperationalError as error:
            if "locked" not in str(error):
                raise
            time.sleep(0.05)
    raise AssertionError(f"{write.__name__} stayed locked out")


def play_worker(job: Job, make_result) -> None:
    """What the db worker records for a GPU host: progress, then the result."""
    recorded(services.record_progress, job_id=job.pk, progress={"phase": "started"})
    for done in (1, 2, 3):
        recorded(
            services.record_progress,
            job_id=job.pk,
            progress={"phase": "measuring", "done": done, "total": 4, "tokens": 16 * done,
                      "elapsed_s": 1.0 * done},
        )  # fmt: skip
        time.sleep(0.3)
    result = make_result(job.config.key, [150.0, 151.0, 149.0, 152.0])
    recorded(services.record_result, job_id=job.pk, result=result)


def wait_for_job(process) -> Job:
    deadline = time.monotonic() + 30
    while not (job := Job.objects.filter(auto_scheduled=False).first()):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return job


def test_submit_wait_follows_the_job_and_prints_its_result_row(site, home, tmp_path, make_result):
    config = write_json(tmp_path, "config.json", CONFIG)
    process = subprocess.Popen(
        [sys.executable, "-m", "runner", "submit", config, "--wait", "--poll", "0.1"],
        cwd=REPOSITORY,
        env=environment(home, SPECBOARD_SITE=site["url"], SPECBOARD_TOKEN=site["token"]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    job = wait_for_job(process)
    play_worker(job, make_result)
    stdout, stderr = process.communicate(timeout=60)

    assert process.returncode == 0, stderr
    run = Run.objects.get(job=job)
    last = stdout.strip().splitlines()[-1]
    assert last.startswith(f"run {run.pk}: config {job.config.key} on {site['hardware'].slug}")
    assert "150.50 tok/s (decode, n=4, 95% CI " in last
    # The board's badges, in words: the tiny fixture models are test weights.
    assert ", flags: test weights — " in last
    assert last.endswith(f"{site['url']}/runs/{run.pk}/")
    # Not a terminal: one line per new state, in order.
    states = stderr.splitlines()
    assert states[0] == f"job {job.pk} queued, position 1"
    assert f"job {job.pk} measuring 3/4 requests" in states
    assert states[-1] == f"job {job.pk} succeeded"
    assert_token_kept_out(site["token"], stdout, stderr)


def test_the_result_row_never_prints_a_negative_interval_and_names_the_flags():
    run = {
        "id": 7, "config_key": "abc", "hardware": "h200", "tps_definition": "decode", "n": 3,
        "tokens_per_second": 45.08, "decode_ci95_low": -4.79, "decode_ci95_high": 94.96,
        "speedup": 1.2, "tau": 7.0,
        "verdicts": {
            "flags": ["test weights", "noisy", "anecdotal"], "noise_reasons": [],
            "evidence_note": "anecdotal: from 1 verify step, 6 drafted tokens",
        },
    }  # fmt: skip
    line = client.result_row(run, "https://site")
    assert "-4.79" not in line
    assert "95% CI 0.00–94.96 (too few requests to place the mean)" in line
    assert "flags: test weights, noisy, anecdotal" in line
    assert "anecdotal: from 1 verify step, 6 drafted tokens" in line
    one = client.result_row(run | {"n": 1}, "https://site")
    assert "no interval" in one


def test_on_a_terminal_submit_wait_draws_a_progress_bar(site, home, tmp_path, make_result):
    config = write_json(tmp_path, "config.json", CONFIG)
    terminal, attached = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "runner", "submit", config, "--wait", "--poll", "0.1"],
        cwd=REPOSITORY,
        env=environment(home, SPECBOARD_SITE=site["url"], SPECBOARD_TOKEN=site["token"]),
        stdout=subprocess.PIPE,
        stderr=attached,
        text=True,
    )
    os.close(attached)
    job = wait_for_job(process)
    play_worker(job, make_result)
    drawn = b""
    while True:
        ready, _, _ = select.select([terminal], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # the process closed its end
            break
        if not chunk:
            break
        drawn += chunk
    stdout, _ = process.communicate(timeout=30)
    os.close(terminal)
    screen = drawn.decode()

    assert process.returncode == 0
    assert "\r[" + "-" * client.BAR_WIDTH + "]   0.0% " in screen
    # 3 of 4 requests: the bar's percent is the job's own (the API's progress.percent).
    assert "measuring 3/4 requests" in screen
    assert "\r[" + "#" * client.BAR_WIDTH + "] 100.0% job" in screen
    assert stdout.startswith(f"job {job.pk} queued")
    assert_token_kept_out(site["token"], screen, stdout)


def test_a_bad_token_is_the_apis_message_and_a_non_zero_exit(site, home, tmp_path):
    config = write_json(tmp_path, "config.json", CONFIG)
    bad = "sbk_" + "x" * 43
    done = runner_command("submit", config, "--site", site["url"], home=home, SPECBOARD_TOKEN=bad)

    assert done.returncode != 0
    assert done.stderr.strip() == "error: Invalid token."
    assert_token_kept_out(bad, done.stdout, done.stderr)
    assert not Job.objects.exists()


def test_a_config_the_site_refuses_is_its_field_message_in_one_line(site, home, tmp_path):
    config = write_json(
        tmp_path,
        "config.json",
        CONFIG | {"draft_model": "tiny-dflash.gguf", "spec_types": ["draft-dflash"], "n_max": 16},
    )
    done = runner_command(
        "submit", config, "--site", site["url"], home=home, SPECBOARD_TOKEN=site["token"]
    )

    assert done.returncode != 0
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: config.n_max: ") and "out of range for draft-dflash" in line
    assert not Job.objects.exists()
    assert_token_kept_out(site["token"], done.stdout, done.stderr)


def test_the_site_and_token_can_come_from_the_config_file(site, home, tmp_path):
    folder = home / ".config" / "specboard"
    folder.mkdir(parents=True)
    (folder / "client.toml").write_text(f'site = "{site["url"]}/"\ntoken = "{site["token"]}"\n')
    config = write_json(tmp_path, "config.json", CONFIG)

    done = runner_command("submit", config, home=home)

    assert done.returncode == 0, done.stderr
    assert Job.objects.filter(owner=site["user"], auto_scheduled=False).count() == 1
    assert_token_kept_out(site["token"], done.stdout, done.stderr)


def test_without_a_token_the_client_says_where_it_looked(home, tmp_path):
    config = write_json(tmp_path, "config.json", CONFIG)
    done = runner_command("submit", config, "--site", "http://127.0.0.1:9", home=home)
    assert done.returncode != 0
    assert "no token: give --token, set SPECBOARD_TOKEN, or put token in " in done.stderr
    assert str(home / ".config" / "specboard" / "client.toml") in done.stderr


def test_upload_records_a_self_reported_result_once(site, home, tmp_path, make_result):
    result = make_result(BenchmarkConfig.model_validate(CONFIG), [120.0, 122.0, 121.0])
    path = write_json(tmp_path, "result.json", result)
    arguments = ("upload", path, "--site", site["url"])
    token = {"SPECBOARD_TOKEN": site["token"]}

    first = runner_command(*arguments, "--hardware", "RTX 4090", home=home, **token)

    assert first.returncode == 0, first.stderr
    run = Run.objects.get()
    assert run.self_reported and run.hardware.gpu_name == "RTX 4090"
    assert first.stdout.startswith(f"uploaded result.json as self-reported on {run.hardware.slug}")
    assert f"run {run.pk}: config {run.config.key}" in first.stdout
    assert "121.00 tok/s" in first.stdout

    again = runner_command(*arguments, "--hardware", "RTX 4090", home=home, **token)
    assert again.returncode != 0
    [line] = again.stderr.strip().splitlines()
    assert line.startswith("error: ") and "already" in line
    assert Run.objects.count() == 1
    assert_token_kept_out(site["token"], first.stdout, first.stderr, again.stdout, again.stderr)


def test_an_upload_that_is_not_json_never_leaves_the_machine(home, tmp_path):
    path = tmp_path / "result.json"
    path.write_text("not json")
    done = runner_command(
        "upload", str(path), "--site", "http://127.0.0.1:9", "--hardware", "x",
        home=home, SPECBOARD_TOKEN="t",
    )  # fmt: skip
    assert done.returncode != 0
    assert done.stderr.startswith(f"error: result file {path} is not valid JSON")


def test_an_unreachable_site_is_one_line(home, tmp_path):
    config = write_json(tmp_path, "config.json", CONFIG)
    done = runner_command(
        "submit", config, "--site", "http://127.0.0.1:9", home=home, SPECBOARD_TOKEN="sbk_secret"
    )
    assert done.returncode != 0
    assert done.stderr.startswith("error: cannot reach http://127.0.0.1:9: ")
    assert "sbk_secret" not in done.stderr


def test_api_errors_flatten_to_one_line():
    import httpx

    def answer(body, status=400):
        return httpx.Response(status, json=body, request=httpx.Request("POST", "http://x/api"))

    assert client.api_message(answer({"detail": "Invalid token."}, 401)) == "Invalid token."
    assert (
        client.api_message(
            answer({"config": {"n_max": ["too big"], "ctx_size": ["too small", "and odd"]}})
        )
        == "config.n_max: too big; config.ctx_size: too small; config.ctx_size: and odd"
    )
    assert client.api_message(answer({"non_field_errors": ["over your allowance"]})) == (
        "over your allowance"
    )
    html = httpx.Response(502, text="<html>", request=httpx.Request("GET", "http://x/api/v1/jobs"))
    assert client.api_message(html) == "HTTP 502 Bad Gateway from /api/v1/jobs"


# A site that is not what the client expects ---------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (lambda: httpx.Response(200, text="<html>portal</html>"), "not a JSON object"),
        (lambda: httpx.Response(201, json=["a", "list"]), "not a JSON object"),
        (lambda: httpx.Response(200, content=b"\x00\xff"), "not a JSON object"),
        (
            lambda: httpx.Response(301, headers={"Location": "https://board.example/api/v1/"}),
            "redirected /api/v1/submissions to 'https://board.example/api/v1/'",
        ),
    ],
    ids=["html", "list", "bytes", "redirect"],
)
def test_the_terminal_client_says_what_a_wrong_site_answered_in_one_error(answer, says):
    transport = httpx.MockTransport(lambda request: answer())
    site = client.SpecboardClient(
        client.Credentials(site="http://board.example", token="sbk_secret"), transport=transport
    )

    with pytest.raises(client.ClientError) as refused:
        site.submit(config=CONFIG, hardware=None)

    assert says in str(refused.value)
    assert "sbk_secret" not in str(refused.value)
    assert not refused.value.transient


def readme_terminal_commands() -> list[str]:
    """The README's "From a terminal" block, one command a line, its comments left out."""
    readme = (REPOSITORY / "README.md").read_text()
    section = readme[readme.index("## From a terminal") :]
    block = section.split("```")[1]
    return [line.split("#")[0].strip() for line in block.strip().splitlines()]


def test_the_readme_terminal_commands_work_as_written(site, home, make_result):
    """Run from the repository's root in a fresh HOME, with what a person types into `cat`; where
    this checkout has no .venv (a worktree), this Python stands in for the one `up` installs."""
    commands = readme_terminal_commands()
    python = REPOSITORY / ".venv" / "bin" / "python"
    if not python.exists():
        commands = [command.replace(".venv/bin/python", sys.executable) for command in commands]
    typed = f'site = "{site["url"]}"\ntoken = "{site["token"]}"\n'

    def shell(command: str, **options) -> subprocess.Popen:
        return subprocess.Popen(
            ["bash", "-c", command], cwd=REPOSITORY, env=environment(home), text=True, **options
        )

    made, typed_in, follow, other = commands[:4]
    for command, given in ((made, ""), (typed_in, typed)):
        shell_process = shell(command, stdin=subprocess.PIPE)
        shell_process.communicate(given, timeout=30)
        assert shell_process.returncode == 0, command
    config_file = home / ".config" / "specboard" / "client.toml"
    assert config_file.stat().st_mode & 0o777 == 0o600

    followed = shell(follow, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    job = wait_for_job(followed)
    play_worker(job, make_result)
    stdout, stderr = followed.communicate(timeout=60)
    assert followed.returncode == 0, stderr
    assert stdout.strip().splitlines()[-1].endswith(f"/runs/{Run.objects.get(job=job).pk}/")

    queued = shell(other, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = queued.communicate(timeout=60)
    assert queued.returncode == 0, stderr
    assert Job.objects.filter(auto_scheduled=False).count() == 2
    assert_token_kept_out(site["token"], stdout, stderr)
