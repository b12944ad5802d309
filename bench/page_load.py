"""What the heaviest run page costs the rest of the site: 8 clients on it, one visitor on the
front.

Seeds a database of its own (PostgreSQL by default, dropped and created; `--database-url
sqlite:///...` works too) with a small board (measured draft-simple configs beside their paired
baselines, ranked), starts the web server as deployed (gunicorn with
leaderboard/web/gunicorn_conf.py, its own workers, DEBUG off, the page cache in a private
redis-server), uploads through the API the heaviest result the upload limit lets through
(tests.support.heavy_results: 6,328 requests, 4.8 MB) and measures, each for --seconds:

- the front page alone (one visitor, one request after another): p50 and p99;
- the heavy run page (and its config page) alone: one client's p50, and what a miss costs (the
  first request after the board changed, median of 5);
- 8 clients on the heavy run page in a loop (wrk, 8 connections) while the visitor keeps loading
  the front page: the visitor's p50 and p99, and the heavy page's requests/s;
- the same with the 8 clients on the heavy config page, and on the run page while a run is
  recorded every 5 s (each change makes every cached page miss once).

With `--exports`, the heavy run's downloads instead: its requests as JSON (the page's export, the
heaviest) and CSV, and its API detail, each alone (one client) and with 8 anonymous clients on it
while the visitor loads the front page (anonymous exports are throttled per address: set
SPECBOARD_ANONYMOUS_EXPORT_RATE high to measure what an unthrottled export costs; past the rate
each 429 comes a second late, so the throttled clients' own figures are near a second).

The load average of the machine is read before and after each figure (other work on it shows
there). The last line is the headline: the front page's p99 with 8 clients on the run page (with
`--exports`, the highest of its p99s with 8 clients on an export).

    .venv/bin/python bench/page_load.py
    .venv/bin/python bench/page_load.py --seconds 10 --database-url sqlite:////tmp/pages.sqlite3
    .venv/bin/python bench/page_load.py --exports
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from bench.site_load import (  # noqa: E402 (the repository on the path first)
    board_changes,
    ensure_wrk,
    free_port,
    fresh_database,
    log,
    scratch_with_redis,
    wait_for_http,
    wrk,
)

LOADERS = 8
MISS_SAMPLES = 5


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile of some timings."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def visit(url: str, *, seconds: float, stop: threading.Event | None = None) -> dict:
    """One visitor loading `url` again and again for `seconds` (one connection, as a browser
    keeps it): every request's milliseconds, their p50 and p99 and the slowest."""
    import httpx

    timings: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds
    with httpx.Client(timeout=30) as client:
        while time.monotonic() < deadline and not (stop and stop.is_set()):
            started = time.perf_counter()
            try:
                status = client.get(url).status_code
            except httpx.HTTPError:
                status = 0
            timings.append((time.perf_counter() - started) * 1000)
            errors += status != 200
    return {
        "p50_ms": statistics.median(timings),
        "p99_ms": percentile(timings, 0.99),
        "max_ms": max(timings),
        "requests": len(timings),
        "errors": errors,
    }


def described(figures: dict) -> str:
    """A visitor's figures and the load average around them, in words."""
    before, after = figures["load"]
    return (
        f"p50 {figures['p50_ms']:.1f} ms, p99 {figures['p99_ms']:.1f} ms, "
        f"max {figures['max_ms']:.0f} ms, {figures['requests']} requests, "
        f"{figures['errors']} errors (load average {before:.1f} -> {after:.1f})"
    )


def under_load(visitor_url: str, loaded_url: str, *, seconds: int) -> tuple[dict, dict]:
    """The visitor's figures on `visitor_url` while 8 wrk connections load `loaded_url`."""
    results: dict[str, dict] = {}

    def load() -> None:
        results["load"] = wrk(loaded_url, seconds=seconds + 2, connections=LOADERS, timeout_s=30)

    loader = threading.Thread(target=load)
    loader.start()
    time.sleep(1.0)  # let the 8 clients get going
    visitor = visit(visitor_url, seconds=seconds)
    loader.join()
    return visitor, results["load"]


def miss_cost(url: str) -> dict:
    """Milliseconds of the first request after the board changed (every cached page misses),
    over HTTP: the web processes read the board's version at most once a second."""
    import httpx

    from leaderboard import services

    timings = []
    with httpx.Client(timeout=60) as client:
        client.get(url)
        for _ in range(MISS_SAMPLES):
            services.raise_board_version()
            time.sleep(1.2)
            started = time.perf_counter()
            assert client.get(url).status_code == 200, url
            timings.append((time.perf_counter() - started) * 1000)
    return {"median_ms": statistics.median(timings), "max_ms": max(timings)}


def seed_board(*, models_dir: Path, configs: int) -> None:
    """`configs` draft-simple configs of the tiny target (n_max 2, 3, ...), each measured beside
    its paired baseline and imported as a runner result, cleared of the test-weights mark."""
    from django.contrib.auth import get_user_model

    from leaderboard import services
    from leaderboard.models import ModelFile
    from leaderboard.services.board import mark_test_weights
    from runner.config import BenchmarkConfig
    from tests.support.baselines import with_baseline_section
    from tests.support.measured_configs import draft_simple
    from tests.support.results import fake_result

    owner, _ = get_user_model().objects.get_or_create(username="page-load")
    hardware = services.register_hardware(gpu_name="NVIDIA H200", memory_bytes=141 * 2**30)
    make = functools.partial(fake_result, models_dir=models_dir)
    for n_max in range(2, configs + 2):
        config = BenchmarkConfig.model_validate(draft_simple(n_max))
        decode = [100.0 + n_max, 104.0 + n_max, 102.0 + n_max]
        result = with_baseline_section(
            make(config, decode, draft=(40, 30), tau=2.2),
            make(config.baseline(), [50.0, 52.0, 51.0]),
        )
        services.import_runner_result(owner=owner, hardware=hardware, result=result, source="bench")
    mark_test_weights(models=ModelFile.objects.all(), test_weights=False)


def upload_heaviest(base: str, *, models_dir: Path) -> tuple[int, str, dict]:
    """The heaviest result through POST /api/v1/uploads: (run id, config key, figures)."""
    import httpx
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from leaderboard.accounts.services import issue_api_token
    from tests.support.heavy_results import heaviest_result
    from tests.support.protocol_results import protocol_result

    limit = settings.SPECBOARD_MAX_IMPORT_BYTES
    result = heaviest_result(
        functools.partial(protocol_result, models_dir=models_dir), limit_bytes=limit
    )
    content = json.dumps(result).encode()
    owner = get_user_model().objects.get(username="page-load")
    token = issue_api_token(user=owner, name="page-load bench").key
    started = time.perf_counter()
    response = httpx.post(
        f"{base}/api/v1/uploads",
        files={"file": ("result.json", content, "application/json")},
        data={"hardware": "NVIDIA H200"},
        headers={"Authorization": f"Token {token}"},
        timeout=300,
    )
    seconds = time.perf_counter() - started
    assert response.status_code == 201, response.text[:500]
    (run,) = response.json()["runs"]
    from leaderboard.models import Run

    stored = Run.objects.select_related("config").get(pk=run["id"])
    return (
        stored.pk,
        stored.config.key,
        {
            "bytes": len(content),
            "limit": limit,
            "requests": len(result["requests"]),
            "upload_s": seconds,
        },
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=20, help="per figure")
    parser.add_argument("--configs", type=int, default=12, help="measured configs on the board")
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/specboard_pagecost"
    )
    parser.add_argument(
        "--exports", action="store_true", help="the heavy run's exports and API detail instead"
    )
    args = parser.parse_args()
    ensure_wrk()

    scratch, models_dir, redis_server, redis_port = scratch_with_redis(prefix="specboard-pages-")
    environment = os.environ | {
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
        "DATABASE_URL": args.database_url,
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
        # Shared by the web processes, as compose's Redis is.
        "CACHE_URL": f"redis://127.0.0.1:{redis_port}/1",
        "SPECBOARD_MODELS_DIR": str(models_dir),
        "SECRET_KEY": "page-load-bench-" + uuid.uuid4().hex,
        "DEBUG": "0",
        "STATIC_MANIFEST": "0",
        "SECURE_COOKIES": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(environment)
    if args.database_url.startswith("postgres"):
        fresh_database(args.database_url)
    elif args.database_url.startswith("sqlite:///"):
        Path(args.database_url.removeprefix("sqlite://")).unlink(missing_ok=True)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from leaderboard import services

    services.register_model(path="tiny-qwen3.gguf")
    services.register_model(path="tiny-dflash.gguf")
    seed_board(models_dir=models_dir, configs=args.configs)

    from leaderboard.web import gunicorn_conf

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "leaderboard.wsgi", "-c"]
        + ["python:leaderboard.web.gunicorn_conf", "--bind", f"127.0.0.1:{port}"],
        env=environment,
        cwd=REPOSITORY,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    figures: dict[str, str] = {
        "web server": (
            f"gunicorn leaderboard.wsgi -c python:leaderboard.web.gunicorn_conf: "
            f"{gunicorn_conf.workers} workers, worker class {gunicorn_conf.worker_class}; "
            f"{os.cpu_count()} CPUs"
        ),
        "database": args.database_url.split("://")[0],
    }
    headline = None
    try:
        wait_for_http(f"{base}/")
        run_id, config_key, upload = upload_heaviest(base, models_dir=models_dir)
        figures["heaviest upload"] = (
            f"{upload['requests']:,} requests, {upload['bytes']:,} bytes (limit "
            f"{upload['limit']:,}), uploaded in {upload['upload_s']:.1f} s"
        )
        front, run_page = f"{base}/", f"{base}/runs/{run_id}/"
        config_page = f"{base}/configs/{config_key}/"
        for url in (front, run_page, config_page):
            visit(url, seconds=2)  # each web process's first requests (imports, templates)

        def measured(label: str, work) -> dict:
            before = os.getloadavg()[0]
            result = work()
            after = os.getloadavg()[0]
            log(f"{label}: {result} (load {before:.1f} -> {after:.1f})")
            return result | {"load": (before, after)}

        alone = measured("front alone", lambda: visit(front, seconds=args.seconds))
        figures["front page alone (one visitor)"] = described(alone)
        downloads = {
            "requests JSON export": f"{base}/runs/{run_id}/requests.json",
            "requests CSV export": f"{base}/runs/{run_id}/requests.csv",
            "API run detail": f"{base}/api/v1/runs/{run_id}",
        }
        heavy_pages = {"run page": run_page, "config page": config_page}
        for name, url in (downloads if args.exports else heavy_pages).items():
            single = measured(f"{name} alone", lambda url=url: visit(url, seconds=args.seconds))
            figures[f"heavy {name} alone (one client)"] = described(single)
            if args.exports:
                continue
            miss = measured(f"{name} miss", lambda url=url: miss_cost(url))
            figures[f"heavy {name}, first request after a board change (median of 5)"] = (
                f"{miss['median_ms']:.0f} ms, max {miss['max_ms']:.0f} ms"
            )
        scenarios = (
            {name: (url, None) for name, url in downloads.items()}
            if args.exports
            else {
                "run page": (run_page, None),
                "config page": (config_page, None),
                "run page, a run recorded every 5 s": (run_page, 5.0),
            }
        )
        for name, (url, every) in scenarios.items():

            def work(url=url, every=every) -> dict:
                if every is None:
                    visitor, load = under_load(front, url, seconds=args.seconds)
                else:
                    with board_changes(every_s=every):
                        visitor, load = under_load(front, url, seconds=args.seconds)
                return visitor | {"heavy": load}

            result = measured(name, work)
            heavy = result["heavy"]
            figures[f"front page with {LOADERS} clients on the heavy {name}"] = described(
                result
            ) + (
                f"; the {name.split(',')[0]}: {heavy['requests_per_s']:.0f} requests/s, "
                f"p50 {heavy['p50_ms']:.0f} ms, p99 {heavy['p99_ms']:.0f} ms, "
                f"{heavy['errors']} errors"
            )
            if headline is None or args.exports:
                headline = max(headline or 0.0, result["p99_ms"])
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        redis_server.kill()
        shutil.rmtree(scratch, ignore_errors=True)

    for name, value in figures.items():
        print(f"{name}: {value}")
    print(f"front_p99_ms={headline:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
