"""The site at community scale: leaderboard reads under load, submissions, and job start latency.

Seeds a PostgreSQL database of its own (dropped and created; default `specboard_bench`) with
--runs runs over --configs configs and --hardware hardware kinds by COPY, derives the
LeaderboardEntry rows by the service's rule (best non-degenerate average per config, hardware
and release; speedup against the paired baseline's row), checks a sample of them against
`services.refresh_leaderboard_entry`, then serves the site with gunicorn (DEBUG off) and
measures with wrk (32 connections on loopback, installed by apt-get if missing):

- the API's leaderboard first page and the HTML leaderboard as the site serves them (pages cached
  per board version), and what a cache miss costs (the first request after a recorded run);
- side by side, the same first page read from the maintained rows and aggregated from the runs
  at read time (GROUP BY), neither cached, with the ratio of the two;
- 1,000 API submissions from 32 concurrent clients: all in the database and in the broker;
- an idle GPU worker's start latency, submission to claim, median over 50 jobs.

    .venv/bin/python bench/site_load.py                              # full scale
    .venv/bin/python bench/site_load.py --runs 20000 --configs 2000  # a quick check
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))
SPEC_LABELS = ("draft-dflash", "draft-mtp", "draft-simple", "ngram", "draft-eagle3")
RELEASES = ("b11434", "b11300")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fresh_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def _copy(cursor, table: str, columns: list[str], rows) -> None:
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def seed(*, runs: int, configs: int, hardware_kinds: int) -> None:
    """Bulk rows by COPY: model files, hardware, configs (a baseline per target) and runs."""
    from django.db import connection
    from django.utils import timezone

    rng = random.Random(7)
    now = timezone.now()
    targets = max(1, configs // 500)
    with connection.cursor() as django_cursor:
        cursor = django_cursor.cursor
        _copy(
            cursor,
            "leaderboard_modelfile",
            ["name", "path", "sha256", "size_bytes", "architecture", "metadata", "role"]
            + ["created_at"],
            (
                (f"target-{t}", f"seed/target-{t}.gguf", f"{t:064x}", 2**30, "qwen3", "{}")
                + ("target", now)
                for t in range(targets)
            ),
        )
        cursor.execute("SELECT id FROM leaderboard_modelfile ORDER BY id")
        target_ids = [row[0] for row in cursor.fetchall()]
        _copy(
            cursor,
            "leaderboard_hardware",
            ["slug", "gpu_name", "memory_bytes", "driver", "cuda", "host", "queue_name"]
            + ["self_reported", "created_at"],
            (
                (f"gpu-{h}", f"GPU model {h}", 80 * 2**30, "580", "13.0", "", f"gpu.gpu-{h}")
                + (False, now)
                for h in range(hardware_kinds)
            ),
        )
        cursor.execute("SELECT id FROM leaderboard_hardware ORDER BY id")
        hardware_ids = [row[0] for row in cursor.fetchall()]

        def config_row(index: int, target: int, spec: str, n_max: int | None):
            label = f"target-{target} · {spec} · n_max {n_max}" if n_max else f"target-{target}"
            canonical = json.dumps({"seed": index, "spec": spec, "n_max": n_max})
            return (f"{index:016x}", canonical, label, target_ids[target], f"target-{target}")

        # The baselines first (one per target), then the speculative configs paired with them.
        columns = ["key", "canonical", "label", "target_id", "target_name", "spec_label"]
        columns += ["protocol", "n_max", "ctx_size", "synthetic", "self_reported", "created_at"]
        _copy(
            cursor,
            "leaderboard_config",
            columns,
            (
                config_row(t, t, "none", None) + ("none", "quick", None, 4096, False, False, now)
                for t in range(targets)
            ),
        )
        cursor.execute("SELECT id, target_name FROM leaderboard_config ORDER BY id")
        baselines = {name: config_id for config_id, name in cursor.fetchall()}
        speculative = []
        for index in range(targets, configs):
            target = index % targets
            spec = SPEC_LABELS[index % len(SPEC_LABELS)]
            n_max = 1 + index // targets % 16
            speculative.append(
                config_row(index, target, spec, n_max)
                + (spec, "quick", n_max, 4096, False, False, now, baselines[f"target-{target}"])
            )
        _copy(cursor, "leaderboard_config", [*columns, "baseline_id"], speculative)
        # One row per speculative type, as the services store them for exact-match filters.
        cursor.execute(
            "INSERT INTO leaderboard_configspectype (config_id, name) "
            "SELECT id, unnest(string_to_array(spec_label, ',')) FROM leaderboard_config "
            "WHERE spec_label <> 'none'"
        )
        cursor.execute("SELECT id FROM leaderboard_config ORDER BY id")
        config_ids = [row[0] for row in cursor.fetchall()]
        # Each config runs on a few hardware kinds, several batches each.
        placements = {
            config_id: rng.sample(hardware_ids, k=min(5, len(hardware_ids)))
            for config_id in config_ids
        }
        run_columns = [
            "config_id", "hardware_id", "engine_release", "engine_backend", "tps_definition", "n",
            "decode_mean", "decode_median", "decode_stdev", "decode_ci95_low", "decode_ci95_high",
            "e2e_mean", "acceptance_rate", "tau", "draft_tokens", "draft_accepted",
            "verify_steps", "synthetic", "degenerate", "self_reported", "memory_kind",
            "gpu_seconds", "run_name", "provenance", "raw_result", "created_at",
        ]  # fmt: skip

        def run_rows():
            for index in range(runs):
                config_id = config_ids[index % len(config_ids)]
                speed = rng.uniform(20.0, 400.0)
                stdev = speed * 0.02
                yield (
                    config_id, rng.choice(placements[config_id]), rng.choice(RELEASES), "cuda",
                    "decode", 5, speed, speed, stdev, speed - 2 * stdev, speed + 2 * stdev,
                    speed * 0.9, rng.random(), 1.0 + rng.random() * 4, 1000, 700, 300, False,
                    rng.random() < 0.01, False, "gpu", 30.0, "", "{}", "{}", now,
                )  # fmt: skip

        started = time.monotonic()
        _copy(cursor, "leaderboard_run", run_columns, run_rows())
        log(f"copied {runs} runs in {time.monotonic() - started:.1f} s")
        started = time.monotonic()
        derive_leaderboard_entries(cursor)
        for release in RELEASES:
            cursor.execute(
                "INSERT INTO leaderboard_enginebuild (release, retired, note, first_seen) "
                "VALUES (%s, false, '', now())",
                [release],
            )
        cursor.execute("ANALYZE")
        log(f"derived leaderboard entries in {time.monotonic() - started:.1f} s")


def derive_leaderboard_entries(cursor) -> None:
    """Every (config, hardware, release) row at once, by services.refresh_leaderboard_entry's rule."""
    cursor.execute(
        """
        INSERT INTO leaderboard_leaderboardentry (
            config_id, hardware_id, engine_release, best_run_id, runs_count, tps_definition,
            tokens_per_second, n, stdev, median, ci95_low, ci95_high,
            end_to_end_tokens_per_second, acceptance_rate, tau, lossless, synthetic,
            self_reported, degenerate, retired, peak_memory_bytes, updated_at)
        SELECT DISTINCT ON (r.config_id, r.hardware_id, r.engine_release)
            r.config_id, r.hardware_id, r.engine_release, r.id,
            count(*) OVER (PARTITION BY r.config_id, r.hardware_id, r.engine_release),
            r.tps_definition, coalesce(r.decode_mean, 0), r.n, r.decode_stdev, r.decode_median,
            r.decode_ci95_low, r.decode_ci95_high, r.e2e_mean, r.acceptance_rate, r.tau,
            r.lossless, r.synthetic, r.self_reported, r.degenerate, false, r.peak_memory_bytes,
            now()
        FROM leaderboard_run r
        ORDER BY r.config_id, r.hardware_id, r.engine_release, r.degenerate,
            r.decode_mean DESC NULLS LAST, r.id
        """
    )
    cursor.execute(
        """
        UPDATE leaderboard_leaderboardentry e
        SET baseline_entry_id = b.id, speedup = e.tokens_per_second / NULLIF(b.tokens_per_second, 0)
        FROM leaderboard_config c, leaderboard_leaderboardentry b
        WHERE c.id = e.config_id AND b.config_id = c.baseline_id
          AND b.hardware_id = e.hardware_id AND b.engine_release = e.engine_release
        """
    )


def check_entries_match_the_service(samples: int) -> int:
    """Recompute a sample of rows with the service and count the ones that differ."""
    from leaderboard import services
    from leaderboard.models import LeaderboardEntry

    mismatches = 0
    for entry in LeaderboardEntry.objects.select_related("config", "hardware").order_by("?")[
        :samples
    ]:
        before = (entry.best_run_id, entry.runs_count, round(entry.tokens_per_second, 6))
        fresh = services.refresh_leaderboard_entry(
            config=entry.config, hardware=entry.hardware, engine_release=entry.engine_release
        )
        after = (fresh.best_run_id, fresh.runs_count, round(fresh.tokens_per_second, 6))
        mismatches += before != after
    return mismatches


def wrk(url: str, *, seconds: int, connections: int, timeout_s: int = 10) -> dict:
    threads = min(2, connections)
    output = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency"]
        + ["--timeout", f"{timeout_s}s", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    units = {"us": 0.001, "ms": 1.0, "s": 1000.0}

    def percentile(name: str) -> float:
        value, unit = re.search(rf"^\s+{name}%\s+([\d.]+)(us|ms|s)\s*$", output, re.M).groups()
        return float(value) * units[unit]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "p50_ms": percentile("50"),
        "p99_ms": percentile("99"),
        "requests_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
        "errors": int(errors.group(1)) if errors else 0,
    }


def ensure_wrk() -> None:
    if shutil.which("wrk"):
        return
    log("installing wrk with apt-get")
    subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, capture_output=True)


def wait_for_http(url: str, timeout_s: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer")


async def submit_many(base: str, token: str, hardware: str, count: int, clients: int) -> list:
    import httpx

    statuses: list[int] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(count):
        queue.put_nowait(index)

    async def client_loop(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            index = queue.get_nowait()
            config = {
                "target_model": "tiny-qwen3.gguf",
                "protocol": {"name": "quick", "n_predict": 8 + index, "runs": 1, "warmup": 0},
            }
            response = await client.post(
                f"{base}/api/v1/submissions",
                json={"hardware": hardware, "config": config},
                headers={"Authorization": f"Token {token}"},
            )
            statuses.append(response.status_code)

    async with httpx.AsyncClient(timeout=60) as client:
        await asyncio.gather(*(client_loop(client) for _ in range(clients)))
    return statuses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--configs", type=int, default=20_000)
    parser.add_argument("--hardware", type=int, default=50)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=15, help="wrk duration per page")
    parser.add_argument("--gunicorn-workers", type=int, default=3)
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--start-samples", type=int, default=50)
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/specboard_bench"
    )
    parser.add_argument("--reuse", action="store_true", help="keep the seeded database")
    parser.add_argument(
        "--pages-only", action="store_true", help="measure the pages; skip submissions and workers"
    )
    parser.add_argument(
        "--write-every",
        type=float,
        default=1.0,
        help="seconds between simulated recorded runs in the pages-under-writes figures",
    )
    args = parser.parse_args()
    ensure_wrk()

    scratch = tempfile.mkdtemp(prefix="specboard-site-")
    from runner.gguf.tiny_models import write_fixtures

    models_dir = next(iter(write_fixtures(Path(scratch) / "models").values())).parent
    redis_port = free_port()
    redis_server = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", ""]
        + ["--appendonly", "no", "--dir", scratch],
        stdout=subprocess.DEVNULL,
    )
    atexit.register(redis_server.kill)
    broker_url = f"redis://127.0.0.1:{redis_port}/0"
    environment = os.environ | {
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
        "DATABASE_URL": args.database_url,
        "CELERY_BROKER_URL": broker_url,
        "SPECBOARD_MODELS_DIR": str(models_dir),
        "SECRET_KEY": "site-load-bench-" + uuid.uuid4().hex,
        "DEBUG": "0",
        "STATIC_MANIFEST": "0",
        "SECURE_COOKIES": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "WARNING",
        # The per-user throttle is policy, not capacity: this bench measures capacity.
        "SPECBOARD_SUBMISSION_RATE": "100000/hour",
        "SPECBOARD_DAILY_TOKENS": str(10**12),
    }
    os.environ.update(environment)
    if not args.reuse:
        fresh_database(args.database_url)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from leaderboard import services
    from leaderboard.accounts.services import issue_api_token
    from leaderboard.models import Job, LeaderboardEntry, Run

    call_command("migrate", verbosity=0)
    user_model = get_user_model()
    owner, _ = user_model.objects.get_or_create(username="site-load")
    if not Run.objects.exists():
        seed(runs=args.runs, configs=args.configs, hardware_kinds=args.hardware)
    mismatches = check_entries_match_the_service(samples=20)
    figures: dict[str, object] = {
        "runs": Run.objects.count(),
        "leaderboard rows": LeaderboardEntry.objects.count(),
        "rows that differ from services.refresh_leaderboard_entry (of 20)": mismatches,
    }
    services.register_model(path="tiny-qwen3.gguf")
    local = services.register_hardware(
        gpu_name="CPU site bench", slug=f"site-{uuid.uuid4().hex[:6]}"
    )
    token = issue_api_token(user=owner, name="site bench").key

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "leaderboard.wsgi", "--bind", f"127.0.0.1:{port}"]
        + ["--workers", str(args.gunicorn_workers), "--log-level", "warning"],
        env=environment | {"DJANGO_SETTINGS_MODULE": "bench.site.settings"},
        cwd=REPOSITORY,
    )
    processes = [server]
    try:
        wait_for_http(f"{base}/api/v1/leaderboard")
        site = {
            "API leaderboard, first page (as served, cached per board version)": (
                f"{base}/api/v1/leaderboard"
            ),
            "HTML leaderboard (as served, cached per board version)": f"{base}/",
            "first page from the maintained rows, uncached": f"{base}/bench/maintained-leaderboard",
        }
        measured = {}
        for name, url in site.items():
            wrk(url, seconds=2, connections=4)  # warm the workers' connections and caches
            measured[name] = wrk(url, seconds=args.seconds, connections=args.connections)
            log(f"{name}: {measured[name]}")
        # The same two pages while results keep arriving: each recorded run raises the board
        # version, and every web process pays one cache miss for it.
        for name, url in list(site.items())[:2]:
            with board_changes(every_s=args.write_every):
                figure = wrk(url, seconds=args.seconds, connections=args.connections)
            label = f"{name.split(' (')[0]}, a run recorded every {args.write_every:g} s"
            measured[label] = figure
            log(f"{label}: {figure}")
        # A GROUP BY over every run takes seconds: with 32 connections on 3 workers each request
        # would wait past any timeout. As many connections as workers keep them all busy, so the
        # requests/s are the server's throughput for this page, comparable with the others.
        aggregated_name = "same first page aggregated from runs at read time, uncached"
        measured[aggregated_name] = wrk(
            f"{base}/bench/aggregated-leaderboard",
            seconds=max(args.seconds, 20),
            connections=args.gunicorn_workers,
            timeout_s=120,
        )
        log(f"{aggregated_name}: {measured[aggregated_name]}")
        maintained = measured["first page from the maintained rows, uncached"]
        aggregated = measured[aggregated_name]
        # No finished request leaves the ratio unknown, not infinite.
        speedup = (
            maintained["requests_per_s"] / aggregated["requests_per_s"]
            if aggregated["requests_per_s"]
            else float("nan")
        )
        cold = cache_miss_costs()
        if args.pages_only:
            report(figures, measured, speedup, cold, args)
            return 0

        started = time.monotonic()
        statuses = asyncio.run(
            submit_many(base, token, local.slug, args.submissions, args.connections)
        )
        submit_seconds = time.monotonic() - started
        import redis

        queued = redis.Redis.from_url(broker_url).llen(local.queue_name)
        in_database = Job.objects.filter(hardware=local).count()
        accepted = statuses.count(201)

        # An idle worker: a db worker and a GPU worker on a real llama-server, one job at a time.
        from leaderboard.workers import db_worker_argv, gpu_worker_argv

        host, key = services.ensure_gpu_host(name="site-bench", hardware_slug=local.slug)
        gpu_host_environment = {"SPECBOARD_HOST_NAME": host.name, "SPECBOARD_HOST_KEY": key}
        redis.Redis.from_url(broker_url).delete(local.queue_name)
        Job.objects.filter(hardware=local).update(status=Job.Status.CANCELLED)
        processes.append(
            subprocess.Popen(
                db_worker_argv(hostname="db-site@%h", loglevel="WARNING", quiet=True),
                env=environment,
                cwd=REPOSITORY,
            )
        )
        processes.append(
            subprocess.Popen(
                gpu_worker_argv(
                    hardware_slug=local.slug, hostname="gpu-site@%h", loglevel="WARNING", quiet=True
                ),
                env=environment | {"SPECBOARD_ROLE": "gpu-worker"} | gpu_host_environment,
                cwd=REPOSITORY,
            )
        )
        latencies = []
        for index in range(args.start_samples + 1):
            config = {
                "target_model": "tiny-qwen3.gguf",
                "protocol": {"name": "quick", "n_predict": 4 + index, "runs": 1, "warmup": 0},
            }
            job = services.submit_config(owner=owner, data=config, hardware_slug=local.slug)
            deadline = time.monotonic() + 120
            while (row := Job.objects.get(pk=job.pk)).status == Job.Status.QUEUED:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"job {job.pk} was never claimed")
                time.sleep(0.01)
            # The first job waits for the workers to start; it is not an idle worker's latency.
            if index:
                latencies.append((row.started_at - row.created_at).total_seconds())
            while Job.objects.filter(pk=job.pk, status__in=Job.ACTIVE).exists():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"job {job.pk} never finished")
                time.sleep(0.05)
    finally:
        for process in reversed(processes):
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        redis_server.kill()
        shutil.rmtree(scratch, ignore_errors=True)

    figures["submissions"] = (
        f"{accepted}/{args.submissions} accepted in {submit_seconds:.1f} s "
        f"({args.submissions / submit_seconds:.0f}/s); {in_database} in the database, "
        f"{queued} in the broker; lost {args.submissions - min(in_database, queued)}"
    )
    figures["idle worker start latency, submission to claim"] = (
        f"median {statistics.median(latencies) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms over {len(latencies)} jobs"
    )
    report(figures, measured, speedup, cold, args)
    return 0


@contextmanager
def board_changes(*, every_s: float):
    """Raise the board version every `every_s` seconds, as recorded runs do, while in the block."""
    from django.db import connection

    from leaderboard import services

    stop = threading.Event()

    def keep_changing() -> None:
        while not stop.wait(every_s):
            services.raise_board_version()
        connection.close()

    changer = threading.Thread(target=keep_changing, daemon=True)
    changer.start()
    try:
        yield
    finally:
        stop.set()
        changer.join()


def cache_miss_costs(samples: int = 5) -> dict[str, float]:
    """Median ms of one request right after the board changed (nothing cached), in process."""
    from django.test import Client

    from leaderboard import services

    client = Client(HTTP_HOST="127.0.0.1")
    costs = {}
    for name, url in (("API first page", "/api/v1/leaderboard"), ("HTML leaderboard", "/")):
        timings = []
        for _ in range(samples):
            services.raise_board_version()
            started = time.perf_counter()
            response = client.get(url)
            timings.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        costs[name] = statistics.median(timings)
    return costs


def report(figures: dict, measured: dict, speedup: float, cold: dict, args) -> None:
    figures["connections"] = f"{args.connections} (the read-time page: {args.gunicorn_workers})"
    for name, figure in measured.items():
        figures[name] = (
            f"p50 {figure['p50_ms']:.1f} ms, p99 {figure['p99_ms']:.1f} ms, "
            f"{figure['requests_per_s']:.0f} requests/s, {figure['errors']} errors"
        )
    for name, milliseconds in cold.items():
        figures[f"{name}, first request after a recorded run (cache miss, in process)"] = (
            f"median {milliseconds:.0f} ms"
        )
    figures["maintained rows vs read-time aggregation, both uncached (requests/s ratio)"] = (
        f"{speedup:.1f}x"
    )
    for name, value in figures.items():
        print(f"{name}: {value}")
    api = measured["API leaderboard, first page (as served, cached per board version)"]
    html = measured["HTML leaderboard (as served, cached per board version)"]
    print(f"api_p99_ms={api['p99_ms']:.1f}")
    print(f"html_p99_ms={html['p99_ms']:.1f}")
    print(f"aggregate_ratio={speedup:.1f}")


if __name__ == "__main__":
    sys.exit(main())
