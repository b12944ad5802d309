"""The web server as deployed (gunicorn with leaderboard/web/gunicorn_conf.py): idle clients cannot
hold it, it refuses to serve several processes from a per-process cache, the submission
allowance holds across its processes, and the database connections it keeps are bounded by its
threads (and refused past what PostgreSQL allows)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
import redis

from leaderboard.web.gunicorn_conf import per_process_cache_problem
from tests.support.brokers import database_url

pytestmark = pytest.mark.e2e
REPOSITORY = Path(__file__).resolve().parents[2]
IDLE_CONNECTIONS = 64
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"  # `./specboard test` installs Debian's nginx
DEPLOYMENT_CACHE = "redis://127.0.0.1:6379/7"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_environment(**extra: str) -> dict:
    return (
        os.environ
        | {
            "DATABASE_URL": database_url(),
            "SECRET_KEY": "slow-clients-test",
            "DEBUG": "0",
            "STATIC_MANIFEST": "0",
        }
        | extra
    )


def gunicorn(application: str, *options: str) -> list[str]:
    """The command line of gunicorn with the project's configuration and these options."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        application,
        "-c",
        "python:leaderboard.web.gunicorn_conf",
    ] + list(options)


@contextmanager
def web_server(
    application: str, *options: str, bind: str | None = None, **environment: str
) -> Iterator[str]:
    """gunicorn with the project's configuration and these options, on a free loopback port (or
    on `bind`, a Unix socket, bound as compose binds it: its URL is then the socket's path)."""
    port = free_port()
    bind = bind or f"127.0.0.1:{port}"
    process = subprocess.Popen(
        gunicorn(application, *options),
        env=server_environment(SPECBOARD_BIND=bind, **environment),
        cwd=REPOSITORY,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    unix = bind.removeprefix("unix:") if bind.startswith("unix:") else None
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_it_answers(
            url, process, transport=httpx.HTTPTransport(uds=unix) if unix else None
        )
        yield unix or url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def wait_until_it_answers(
    url: str, process: subprocess.Popen, *, transport: httpx.HTTPTransport | None = None
) -> None:
    deadline = time.monotonic() + 60
    with httpx.Client(transport=transport, timeout=2) as client:
        while True:
            try:
                client.get(f"{url}/api/v1/hardware")
                return
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{process.args[:3]} did not start") from None
                time.sleep(0.2)


def refused_start(application: str, environment: dict, *options: str) -> str:
    """What gunicorn printed when the project's configuration refused to start it."""
    started = subprocess.run(
        gunicorn(application, "--bind", f"127.0.0.1:{free_port()}", *options),
        env=environment,
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode != 0
    return started.stdout + started.stderr


def page_time_with_idle_clients(url: str, *, half_sent: int = 0) -> float:
    """Seconds to fetch the leaderboard page while 64 clients hold idle connections open (and
    `half_sent` more have sent half of a request's headers and stopped)."""
    port = int(url.rsplit(":", 1)[1])
    with ExitStack() as idle:
        for index in range(IDLE_CONNECTIONS + half_sent):
            client = idle.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
            if index >= IDLE_CONNECTIONS:
                client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow")
        time.sleep(0.5)  # let the server accept them all
        started = time.monotonic()
        try:
            response = httpx.get(f"{url}/", timeout=3)
        except httpx.TimeoutException:
            return float("inf")
        assert response.status_code == 200
        return time.monotonic() - started


@contextmanager
def deployment(tmp_path: Path, **environment: str) -> Iterator[str]:
    """The site as docker compose deploys it: gunicorn with the project's configuration on a Unix
    socket, behind nginx started from deploy/nginx.conf as it is (only the socket's path and the
    port replaced, and nginx's files kept in `tmp_path`)."""
    # nginx's workers run as an unprivileged user: the socket's folder is open to them, as
    # /run/specboard is in compose (pytest's own temporary folders are its user's alone).
    socket_folder = Path(tempfile.mkdtemp(prefix="specboard-web-"))
    socket_folder.chmod(0o755)
    try:
        yield from _deployment(tmp_path, socket_folder / "web.sock", environment)
    finally:
        shutil.rmtree(socket_folder, ignore_errors=True)


def _deployment(tmp_path: Path, socket_path: Path, environment: dict) -> Iterator[str]:
    port = free_port()
    config = (REPOSITORY / "deploy" / "nginx.conf").read_text()
    assert "unix:/run/specboard/web.sock" in config and "listen 8000;" in config
    config = config.replace("/run/specboard/web.sock", str(socket_path))
    (tmp_path / "nginx.conf").write_text(
        config.replace("listen 8000;", f"listen 127.0.0.1:{port};")
    )
    with web_server(
        "leaderboard.wsgi",
        "--workers",
        "2",
        bind=f"unix:{socket_path}",
        SPECBOARD_TRUSTED_PROXIES="1",
        CACHE_URL=DEPLOYMENT_CACHE,
        **environment,
    ):
        proxy = subprocess.Popen(
            [NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_it_answers(url, proxy)
            yield url
        finally:
            proxy.terminate()
            proxy.wait(timeout=20)


def test_idle_and_half_sent_connections_do_not_hold_the_deployment(transactional_db, tmp_path):
    # nginx holds 64 idle connections and 16 that sent half a request in its event loop; gunicorn
    # sees only whole requests.
    with deployment(tmp_path) as url:
        assert page_time_with_idle_clients(url, half_sent=16) < 1.0


def test_the_same_connections_hold_gunicorn_alone_which_is_why_the_proxy_stands_in_front(
    transactional_db,
):
    # gunicorn's threaded workers give each new connection a thread for up to 5 s while its
    # request arrives: 64 idle ones queue the page behind them on the one process's 8 threads.
    with web_server("leaderboard.wsgi", "--workers", "1") as url:
        assert page_time_with_idle_clients(url) > 1.0


def test_behind_the_proxy_a_limit_counts_the_address_nginx_saw_not_one_the_client_wrote(
    transactional_db, tmp_path
):
    # Three downloads under three addresses the client wrote in X-Forwarded-For: nginx appends
    # the address it saw, the only one the site reads, so the third is over an allowance of 2.
    cache = redis.Redis.from_url(DEPLOYMENT_CACHE)
    cache.flushdb()
    with deployment(tmp_path, SPECBOARD_ANONYMOUS_EXPORT_RATE="2/hour") as url:
        statuses = [
            httpx.get(
                f"{url}/api/v1/exports/leaderboard.csv",
                headers={"X-Forwarded-For": f"6.6.6.{index}"},
                timeout=10,
            ).status_code
            for index in range(3)
        ]
    assert statuses == [200, 200, 429]
    # Counted under nginx's own entry (loopback here), not under nobody (a Unix socket's empty
    # peer, were the proxy not counted) nor under what the client wrote.
    counted = [key for key in cache.keys("*") if b"anonymous-exports" in key]
    assert counted and all(b"_127.0.0.1:" in key for key in counted), counted


def test_several_processes_on_a_per_process_cache_are_refused_at_start(transactional_db, settings):
    settings.DEBUG = False
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert "per-process cache" in per_process_cache_problem(workers=3)
    assert per_process_cache_problem(workers=1) is None
    environment = {key: value for key, value in server_environment().items() if key != "CACHE_URL"}
    assert "refusing to start" in refused_start("leaderboard.wsgi", environment, "--workers", "2")


def test_the_submission_allowance_holds_across_web_processes(
    transactional_db, models, hardware, user
):
    from concurrent.futures import ThreadPoolExecutor

    from leaderboard.accounts.services import issue_api_token
    from leaderboard.models import Job

    token = issue_api_token(user=user, name="tests").key
    with web_server(
        "leaderboard.wsgi",
        "--workers",
        "3",
        SPECBOARD_SUBMISSION_RATE="5/hour",
        CACHE_URL="redis://127.0.0.1:6379/11",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/12",
    ) as url:

        def submit(index: int) -> int:
            config = {
                "target_model": "tiny-qwen3.gguf",
                "threads": index + 1,
                "protocol": {"name": "quick", "n_predict": 8},
            }
            # A new connection each time, so the requests spread over the processes.
            with httpx.Client(timeout=30) as client:
                return client.post(
                    f"{url}/api/v1/submissions",
                    json={"hardware": hardware.slug, "config": config},
                    headers={"Authorization": f"Token {token}"},
                ).status_code

        with ThreadPoolExecutor(max_workers=6) as pool:
            codes = sorted(pool.map(submit, range(12)))

    assert codes == [201] * 5 + [429] * 7
    assert Job.objects.filter(owner=user, auto_scheduled=False).count() == 5


def test_the_connections_a_web_process_keeps_are_at_most_its_threads(transactional_db):
    """Each request runs on one of WEB_THREADS threads, which keep their connections: 80
    requests from 8 clients leave at most that many open (a thread of its own per request once
    took PostgreSQL past its 100 connections in a minute), and reuse them."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("counts PostgreSQL's connections")

    def backends() -> set[int]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid()"
            )
            return {pid for (pid,) in cursor.fetchall()}

    from concurrent.futures import ThreadPoolExecutor

    before = backends()
    with web_server(
        "leaderboard.wsgi", "--workers", "1", WEB_THREADS="2", DATABASE_CONN_MAX_AGE="60"
    ) as url:

        def load(_: int) -> list[int]:
            with httpx.Client(timeout=30) as client:
                return [client.get(f"{url}/api/v1/hardware").status_code for _ in range(10)]

        with ThreadPoolExecutor(max_workers=8) as pool:
            codes = [code for codes in pool.map(load, range(8)) for code in codes]
        kept = backends() - before
        assert codes == [200] * 80
        assert 1 <= len(kept) <= 2
        with ThreadPoolExecutor(max_workers=8) as pool:
            assert all(code == 200 for codes in pool.map(load, range(8)) for code in codes)
        assert backends() - before == kept  # the same connections, reused


def test_more_threads_than_the_database_has_connections_for_are_refused(transactional_db):
    from django.db import connection

    from leaderboard.web.gunicorn_conf import connection_budget_problem

    assert connection_budget_problem(workers=5, threads=4, max_connections=100) is None
    assert "could hold 120" in connection_budget_problem(workers=30, threads=4, max_connections=100)
    if connection.vendor != "postgresql":
        pytest.skip("asks PostgreSQL its max_connections")
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_connections")
        limit = int(cursor.fetchone()[0])
    environment = server_environment(
        WEB_WORKERS="1", WEB_THREADS=str(limit), DATABASE_CONN_MAX_AGE="60"
    )
    assert "database connections" in refused_start("leaderboard.wsgi", environment)


# The largest body the server takes with SPECBOARD_MAX_IMPORT_BYTES at 1 MiB: DATA_UPLOAD_MAX_
# MEMORY_SIZE, 2 MiB (bodies past 1 MiB, FILE_UPLOAD_MAX_MEMORY_SIZE, are spooled to disk).
SMALL_IMPORTS = {"SPECBOARD_MAX_IMPORT_BYTES": str(2**20)}
BODY_LIMIT = 2 * 2**20
CHUNK = 256 * 1024


def spooled_bytes(folder: Path) -> int:
    """The bytes held in temporary files under `folder` that a process of ours has open (a
    spooled body is unlinked at once, so it shows only among the processes' open files)."""
    held = 0
    for descriptor in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(descriptor).startswith(str(folder)):
                held += os.stat(descriptor).st_size
        except OSError:
            continue  # gone meanwhile, or not ours
    return held


def response_head(client: socket.socket) -> bytes:
    """The status line and headers the server answered on this connection."""
    received = b""
    while b"\r\n\r\n" not in received:
        part = client.recv(65536)
        if not part:
            break
        received += part
    return received


def declared_body_answer(url: str, path: str, length: int, *, expect: bool = True) -> bytes:
    """The answer to a POST that declares `length` bytes and sends none of them (asking for a
    "100 Continue" first, as curl does, where `expect`)."""
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(
            (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + ("Expect: 100-continue\r\n" if expect else "")
                + f"Content-Length: {length}\r\n\r\n"
            ).encode()
        )
        return response_head(client)


def chunked_body_answer(url: str, path: str, *, most: int, folder: Path) -> tuple[bytes, int, int]:
    """Send a chunked body of up to `most` bytes, never ending it, until the server answers or
    stops reading: its answer, the bytes sent and the most spooled to disk meanwhile."""
    port = int(url.rsplit(":", 1)[1])
    sent = spooled = 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        client.settimeout(2)
        try:
            while sent < most:
                client.sendall(f"{CHUNK:x}\r\n".encode() + b"x" * CHUNK + b"\r\n")
                sent += CHUNK
                spooled = max(spooled, spooled_bytes(folder))
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass  # the server stopped reading
        client.settimeout(10)
        try:
            return response_head(client), sent, spooled
        except ConnectionResetError:
            return b"", sent, spooled


def test_the_wsgi_server_refuses_a_large_declared_body_and_a_chunked_one_it_cannot_read(
    transactional_db, tmp_path
):
    with web_server(
        "leaderboard.wsgi", "--workers", "1", "--worker-class", "gthread", **SMALL_IMPORTS
    ) as url:
        # gunicorn's WSGI workers answer "100 Continue" themselves, before the application.
        declared = declared_body_answer(url, "/api/v1/submissions", 2 * 2**30, expect=False)
        assert declared.startswith(b"HTTP/1.1 413 ")
        answer, sent, _ = chunked_body_answer(
            url, "/api/v1/submissions", most=64 * 2**20, folder=tmp_path
        )
        assert answer.startswith(b"HTTP/1.1 411 ")
        assert sent < 24 * 2**20


def test_the_anonymous_download_throttle_holds_across_web_processes(
    transactional_db, models, hardware, user, enqueued, make_result
):
    from concurrent.futures import ThreadPoolExecutor

    from leaderboard import services
    from tests.support.api_clients import SPECULATIVE

    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    run = services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0, 120.0]))
    with web_server(
        "leaderboard.wsgi",
        "--workers",
        "3",
        SPECBOARD_ANONYMOUS_EXPORT_RATE="5/hour",
        CACHE_URL="redis://127.0.0.1:6379/14",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/14",
    ) as url:
        import redis

        redis.Redis.from_url("redis://127.0.0.1:6379/14").flushdb()

        def download(index: int) -> int:
            path = ("/api/v1/runs/{}", "/runs/{}/requests.csv")[index % 2].format(run.pk)
            # A new connection each time, so the requests spread over the processes.
            with httpx.Client(timeout=30) as client:
                return client.get(f"{url}{path}").status_code

        with ThreadPoolExecutor(max_workers=6) as pool:
            codes = sorted(pool.map(download, range(12)))
        redis.Redis.from_url("redis://127.0.0.1:6379/14").flushdb()

    assert codes == [200] * 5 + [429] * 7
