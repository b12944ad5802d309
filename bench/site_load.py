"""The site at community scale: leaderboard reads under load, submissions, and job start latency.

Seeds a PostgreSQL database of its own (dropped and created; default `specboard_bench`) with
--runs runs over --configs configs and --hardware hardware kinds by COPY, derives the
LeaderboardEntry rows in bulk (each row's best batch and pooled figures in SQL, the speedup
against the paired baseline's row) and their verdict columns by the site's own rules, called
rather than copied (`verdicts` for each row's sample, intervals and flags and each ranking's
standings, `services.summarize_every_ranking` for the summaries), checks a sample of rows column
by column against `services.refresh_leaderboard_entry` (and their rankings against
`services.board.rerank`), then serves the site with gunicorn (DEBUG off) and measures with wrk
(32 connections on loopback, installed by apt-get if missing):

- the API's leaderboard first page and the HTML leaderboard as the site serves them (pages kept
  until a ranking they show changes), the same while a run is recorded every second (a random
  row derived again from its runs by the service, as the db worker does), and what a whole
  recompute costs (the first request after a change that names no ranking, in process);
- the answer pages (the model page with its draft advice, /best/, /nmax/, /concurrency/) as
  served, one connection per web worker, and the first request of each after a board change;
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
import gc
import itertools
import json
import math
import operator
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
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
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


def scratch_with_redis(*, prefix: str) -> tuple[str, Path, subprocess.Popen, int]:
    """A scratch folder holding the tiny test models, and a throwaway redis-server on a free
    port (killed at exit too): the folder, the models' directory, the server and its port."""
    scratch = tempfile.mkdtemp(prefix=prefix)
    from runner.gguf.tiny_models import write_fixtures

    models_dir = next(iter(write_fixtures(Path(scratch) / "models").values())).parent
    redis_port = free_port()
    redis_server = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", ""]
        + ["--appendonly", "no", "--dir", scratch],
        stdout=subprocess.DEVNULL,
    )
    atexit.register(redis_server.kill)
    return scratch, models_dir, redis_server, redis_port


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
            + ["self_reported", "created_at", "gpus", "cpu_model"],
            (
                (f"gpu-{h}", f"GPU model {h}", 80 * 2**30, "580", "13.0", "", f"gpu.gpu-{h}")
                + (False, now, "[]", "")
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
            "lossless", "peak_memory_bytes",
        ]  # fmt: skip
        baseline_ids = set(baselines.values())

        def run_rows():
            for index in range(runs):
                config_id = config_ids[index % len(config_ids)]
                speed = rng.uniform(20.0, 400.0)
                stdev = speed * 0.02
                # Lossless speculative batches and a peak memory of 2-61 GB (from the index, so
                # that the random figures stay those of earlier versions of this bench): /best/
                # answers only from lossless rows that fit the memory asked.
                yield (
                    config_id, rng.choice(placements[config_id]), rng.choice(RELEASES), "cuda",
                    "decode", 5, speed, speed, stdev, speed - 2 * stdev, speed + 2 * stdev,
                    speed * 0.9, rng.random(), 1.0 + rng.random() * 4, 1000, 700, 300, False,
                    rng.random() < 0.01, False, "gpu", 30.0, "", "{}", "{}", now,
                    None if config_id in baseline_ids else True,
                    (2 + index * 7919 % 60) * 10**9,
                )  # fmt: skip

        started = time.monotonic()
        _copy(cursor, "leaderboard_run", run_columns, run_rows())
        log(f"copied {runs} runs in {time.monotonic() - started:.1f} s")
        started = time.monotonic()
        derive_leaderboard_entries(cursor)
        derive_verdicts(cursor)
        for release in RELEASES:
            cursor.execute(
                "INSERT INTO leaderboard_enginebuild (release, retired, note, first_seen) "
                "VALUES (%s, false, '', now())",
                [release],
            )
        # The seeded quick batches all sent the protocol's text prompt (`verdicts.prompt_set`,
        # which the service reads from a run once derived): their rows are text workloads.
        cursor.execute("UPDATE leaderboard_run SET prompt_set = 'text'")
        cursor.execute("UPDATE leaderboard_leaderboardentry SET prompt_set = 'text'")
        # The bulk UPDATEs above leave every row's earlier versions behind (two or three times
        # the table, which each scan of it would pay); the service writes a row once per run
        # and autovacuum keeps up with it: rewrite the table as a board of this size would be.
        cursor.execute("VACUUM FULL leaderboard_leaderboardentry")
        cursor.execute("ANALYZE")
        log(f"derived leaderboard entries in {time.monotonic() - started:.1f} s")


def derive_leaderboard_entries(cursor) -> None:
    """Every (config, hardware, release) row at once, by services.refresh_leaderboard_entry's rule
    (the seeded runs are all decode batches of the quick protocol; the rule below is written for
    those): the best batch is the fastest clean one (not degenerate, not noisy), else the fastest
    not degenerate, else the fastest; the pool is every batch's requests (no request records:
    each mean counted n times, no interval); lossless only when every compared batch was."""
    cursor.execute(
        f"""
        INSERT INTO leaderboard_leaderboardentry (
            config_id, target_name, spec_label, n_max, hardware_id, engine_release, best_run_id,
            runs_count,
            tps_definition,
            tokens_per_second, n, stdev, median, ci95_low, ci95_high, pooled_mean, pooled_n,
            end_to_end_tokens_per_second, acceptance_rate, tau, lossless, synthetic,
            self_reported, degenerate, retired, peak_memory_bytes, updated_at)
        SELECT DISTINCT ON (r.config_id, r.hardware_id, r.engine_release)
            r.config_id, c.target_name, c.spec_label, c.n_max, r.hardware_id, r.engine_release,
            r.id,
            count(*) OVER row_runs,
            r.tps_definition, coalesce(r.decode_mean, 0), r.n, r.decode_stdev, r.decode_median,
            r.decode_ci95_low, r.decode_ci95_high,
            sum(r.decode_mean * r.n) FILTER (WHERE r.decode_mean <> 0 AND r.n > 0) OVER row_runs
                / nullif(sum(r.n) FILTER (WHERE r.decode_mean <> 0 AND r.n > 0) OVER row_runs, 0),
            coalesce(sum(r.n) FILTER (WHERE r.decode_mean <> 0 AND r.n > 0) OVER row_runs, 0),
            r.e2e_mean, r.acceptance_rate, r.tau,
            bool_and(r.lossless) FILTER (WHERE NOT r.synthetic) OVER row_runs,
            r.synthetic, r.self_reported, r.degenerate, false, r.peak_memory_bytes,
            now()
        FROM leaderboard_run r JOIN leaderboard_config c ON c.id = r.config_id
        WINDOW row_runs AS (PARTITION BY r.config_id, r.hardware_id, r.engine_release)
        ORDER BY r.config_id, r.hardware_id, r.engine_release,
            CASE WHEN r.decode_mean IS NULL THEN 2 WHEN r.degenerate THEN 2
                 WHEN {NOISY_RUN} THEN 1 ELSE 0 END,
            r.decode_mean DESC NULLS LAST, r.id
        """
    )
    cursor.execute(
        """
        UPDATE leaderboard_leaderboardentry e
        SET baseline_entry_id = b.id, baseline_run_id = b.best_run_id,
            speedup = e.tokens_per_second / NULLIF(b.tokens_per_second, 0)
        FROM leaderboard_config c, leaderboard_leaderboardentry b
        WHERE c.id = e.config_id AND b.config_id = c.baseline_id
          AND b.hardware_id = e.hardware_id AND b.engine_release = e.engine_release
        """
    )


# verdicts.is_noisy of a quick batch's decode requests: spread over half its mean.
NOISY_RUN = (
    "(r.n >= 2 AND r.decode_stdev IS NOT NULL AND r.decode_stdev >= 0"
    " AND (r.decode_mean <= 0 OR r.decode_stdev > 0.5 * r.decode_mean))"
)


def derive_verdicts(cursor) -> None:
    """The verdict columns of every row, decided by the site's own rules rather than a copy of
    them: the ranking key and labels by `verdicts.workloads` once per distinct workload, each
    row's config sample, intervals and flags by the `verdicts` functions the service calls
    (`row_verdicts`), each ranking's ranks and ties by `verdicts.standing_columns` and its
    summaries by `services.summarize_every_ranking`."""
    from leaderboard import services

    started = time.monotonic()
    _derive_ranking_names(cursor)
    log(f"  ranking keys and labels in {time.monotonic() - started:.1f} s")
    started = time.monotonic()
    # Each row's best batch, the baseline batch its speedup divides by, and its config's clean
    # batches of the best one's definition (degenerate ones measured something else).
    cursor.execute(
        """
        SELECT e.id, c.protocol, c.spec_label,
            CASE WHEN br.tps_definition = 'decode' THEN br.decode_mean ELSE br.e2e_mean END,
            CASE WHEN br.tps_definition = 'decode' THEN br.decode_stdev ELSE br.e2e_stdev END,
            br.n, br.draft_tokens, br.verify_steps, br.tau, br.raw_result -> 'requests',
            CASE WHEN bb.tps_definition = 'decode' THEN bb.decode_mean ELSE bb.e2e_mean END,
            CASE WHEN bb.tps_definition = 'decode' THEN bb.decode_stdev ELSE bb.e2e_stdev END,
            bb.n, e.baseline_run_id IS NOT NULL,
            (SELECT array_agg(ARRAY[
                    CASE WHEN r.tps_definition = 'decode' THEN r.decode_mean ELSE r.e2e_mean END,
                    CASE WHEN r.tps_definition = 'decode' THEN r.decode_stdev ELSE r.e2e_stdev END,
                    r.n] ORDER BY r.id)
             FROM leaderboard_run r
             WHERE r.config_id = e.config_id AND r.hardware_id = e.hardware_id
               AND r.engine_release = e.engine_release
               AND r.tps_definition = br.tps_definition AND NOT r.degenerate)
        FROM leaderboard_leaderboardentry e
        JOIN leaderboard_config c ON c.id = e.config_id
        JOIN leaderboard_run br ON br.id = e.best_run_id
        LEFT JOIN leaderboard_run bb ON bb.id = e.baseline_run_id
        """
    )
    rows = cursor.fetchall()
    columns = [
        "id", "config_mean", "config_stdev", "config_n", "config_ci95_low", "config_ci95_high",
        "interval_basis", "speedup_ci95_low", "speedup_ci95_high", "speedup_basis", "noisy",
        "memorised", "baseline_noisy", "draft_tokens", "verify_steps", "anecdotal",
    ]  # fmt: skip
    cursor.execute(
        "CREATE TEMP TABLE bench_verdicts (id bigint PRIMARY KEY, config_mean float8,"
        " config_stdev float8, config_n integer, config_ci95_low float8, config_ci95_high float8,"
        " interval_basis text, speedup_ci95_low float8, speedup_ci95_high float8,"
        " speedup_basis text, noisy boolean, memorised boolean, baseline_noisy boolean,"
        " draft_tokens integer, verify_steps integer, anecdotal boolean)"
    )
    _copy(cursor, "bench_verdicts", columns, (row_verdicts(*row) for row in rows))
    assignments = ", ".join(f"{name} = v.{name}" for name in columns[1:])
    cursor.execute(
        f"UPDATE leaderboard_leaderboardentry e SET {assignments}, crossover = ''"
        " FROM bench_verdicts v WHERE v.id = e.id"
    )
    cursor.execute("DROP TABLE bench_verdicts")
    log(f"  {len(rows)} rows' samples, intervals and flags in {time.monotonic() - started:.1f} s")
    started = time.monotonic()
    rankings = _derive_standings(cursor)
    summaries = services.summarize_every_ranking()
    log(
        f"  {rankings} rankings ranked and {summaries} targets' summaries in "
        f"{time.monotonic() - started:.1f} s"
    )


def _derive_standings(cursor) -> int:
    """Every ranking's ranks and ties among its competing rows, decided by
    `verdicts.standing_columns` from the rows' figures and config samples, as
    `services.board.rerank` decides them (the check reranks a sample with it); how many
    rankings."""
    from leaderboard import verdicts

    flags = ", ".join(f"e.{flag}" for flag in verdicts.KEPT_OFF_FLAGS)
    cursor.execute(
        "SELECT e.ranking_key, e.id, e.tokens_per_second, e.config_mean, e.config_stdev,"
        f" e.config_n, e.spec_label, {flags} FROM leaderboard_leaderboardentry e"
        " ORDER BY e.ranking_key"
    )
    standings = []
    rankings = 0
    for _, rows in itertools.groupby(cursor.fetchall(), key=operator.itemgetter(0)):
        competing = [
            row for row in rows if verdicts.competes_as(kept_off=row[7:], spec_label=row[6])
        ]
        found = verdicts.standing_columns(
            ids=[row[1] for row in competing],
            figures=[row[2] for row in competing],
            samples=verdicts.SampleColumns.of_summaries(
                [row[3] for row in competing],
                [row[4] for row in competing],
                [row[5] for row in competing],
            ),
        )
        standings += [(pk, *standing) for pk, standing in found.items()]
        rankings += 1
    cursor.execute(
        "CREATE TEMP TABLE bench_standings (id bigint PRIMARY KEY, rank integer,"
        " like_leader boolean, like_above boolean)"
    )
    _copy(cursor, "bench_standings", ["id", "rank", "like_leader", "like_above"], standings)
    cursor.execute(
        "UPDATE leaderboard_leaderboardentry e SET rank = v.rank, like_leader = v.like_leader,"
        " like_above = v.like_above FROM bench_standings v WHERE v.id = e.id"
    )
    cursor.execute("DROP TABLE bench_standings")
    return rankings


def _derive_ranking_names(cursor) -> None:
    """Each row's ranking key and labels, by `verdicts.workloads`, once per distinct (workload,
    definition, hardware kind, release)."""
    from leaderboard import verdicts
    from leaderboard.models import Config

    cursor.execute(
        """
        SELECT DISTINCT c.protocol, c.protocol_variant, c.canonical -> 'protocol',
            e.tps_definition, e.hardware_id, h.gpu_name, e.engine_release
        FROM leaderboard_leaderboardentry e
        JOIN leaderboard_config c ON c.id = e.config_id
        JOIN leaderboard_hardware h ON h.id = e.hardware_id
        """
    )
    names = []
    for protocol, variant, canonical, definition, hardware_id, gpu_name, release in cursor:
        config = Config(
            protocol=protocol,
            protocol_variant=variant,
            canonical={} if canonical is None else {"protocol": canonical},
        )
        names.append(
            (
                protocol, variant, None if canonical is None else json.dumps(canonical), definition, hardware_id, release,
                verdicts.ranking_key(
                    config, definition=definition, hardware_id=hardware_id, engine_release=release
                ),
                verdicts.ranking_label(
                    config, definition=definition, gpu_name=gpu_name, engine_release=release
                ),
                verdicts.workload_label(config),
            )
        )  # fmt: skip
    cursor.execute(
        "CREATE TEMP TABLE bench_rankings (protocol text, variant text, canonical jsonb,"
        " definition text, hardware_id bigint, release text, key text, label text,"
        " workload text)"
    )
    _copy(
        cursor,
        "bench_rankings",
        ["protocol", "variant", "canonical", "definition", "hardware_id", "release", "key"]
        + ["label", "workload"],
        names,
    )
    cursor.execute(
        """
        UPDATE leaderboard_leaderboardentry e
        SET ranking_key = t.key, ranking_label = t.label, workload_label = t.workload
        FROM leaderboard_config c, bench_rankings t
        WHERE c.id = e.config_id AND t.protocol = c.protocol AND t.variant = c.protocol_variant
            AND t.canonical IS NOT DISTINCT FROM c.canonical -> 'protocol'
            AND t.definition = e.tps_definition AND t.hardware_id = e.hardware_id
            AND t.release = e.engine_release
        """
    )
    cursor.execute("DROP TABLE bench_rankings")


def row_verdicts(
    entry_id, protocol, spec_label, best_mean, best_stdev, best_n, drafted,
    verify_steps, tau, requests, baseline_mean, baseline_stdev, baseline_n, paired, batches,
) -> tuple:  # fmt: skip
    """One row's verdict columns (in `derive_verdicts`' order) from its batches' summaries, by
    the `verdicts` functions `services.board` calls for a row of the seeded kind (quick decode
    batches without request records or points)."""
    from leaderboard import verdicts

    best = verdicts.summary_sample(best_mean, best_stdev, max(best_n, 1))
    alike = [
        found
        for mean, stdev, n in batches or []
        if (found := verdicts.summary_sample(mean, stdev, max(int(n), 1))) is not None
    ]
    config = verdicts.config_uncertainty(alike, best=best, unit=verdicts.REQUESTS)
    baseline = (
        verdicts.summary_sample(baseline_mean, baseline_stdev, max(baseline_n or 0, 1))
        if paired
        else None
    )
    speedup = (
        verdicts.speedup_uncertainty(own=best, baseline=baseline)
        if paired
        else verdicts.NO_UNCERTAINTY
    )
    sample, low_high = config.sample, config.interval or (None, None)
    return (
        entry_id,
        sample.mean if sample else None,
        sample.stdev if sample else None,
        config.n,
        *low_high,
        config.basis,
        *(speedup.interval or (None, None)),
        speedup.basis,
        verdicts.is_noisy(best, protocol=protocol),
        verdicts.learns_across_requests(spec_label)
        and (protocol == verdicts.SEED_CSV_PROTOCOL or verdicts.repeats_a_prompt(requests)),
        paired and verdicts.is_noisy(baseline, protocol=protocol),
        drafted,
        verify_steps,
        verdicts.anecdotal(
            speculative=spec_label != "none", drafted=drafted, verify_steps=verify_steps, tau=tau
        ),
    )


# What the check compares, where this checkout's LeaderboardEntry has the column.
CHECKED_FIELDS = (
    "best_run_id", "runs_count", "tps_definition", "tokens_per_second", "n", "stdev", "median",
    "ci95_low", "ci95_high", "pooled_mean", "pooled_n", "end_to_end_tokens_per_second",
    "lossless", "peak_memory_bytes", "baseline_entry_id", "baseline_run_id", "speedup",
    "ranking_key", "ranking_label", "workload_label", "rank", "like_leader", "like_above",
    "config_mean", "config_stdev", "config_n", "config_ci95_low", "config_ci95_high",
    "interval_basis", "speedup_ci95_low", "speedup_ci95_high", "speedup_basis", "noisy",
    "memorised", "crossover", "draft_tokens", "verify_steps", "anecdotal",
    "baseline_noisy",
)  # fmt: skip


def _same(first: object, second: object) -> bool:
    # SQL's sums and the service's math.fsum may differ in the last bits.
    if isinstance(first, float) and isinstance(second, float):
        return math.isclose(first, second, rel_tol=1e-9, abs_tol=1e-12)
    return first == second


def check_entries_match_the_service(samples: int) -> dict[str, object]:
    """Recompute a sample of rows with the service and count the ones that differ (and in which
    columns); first rank each sampled row's ranking again with services.board.rerank and count
    the rows whose stored rank or tie labels it changed."""
    from leaderboard import services
    from leaderboard.models import LeaderboardEntry

    names = {field.attname for field in LeaderboardEntry._meta.concrete_fields}
    fields = [name for name in CHECKED_FIELDS if name in names]
    verdict_columns = "ranking_key" in names
    mismatches = 0
    differing: dict[str, int] = {}
    reranked = ranked_rows = 0
    sampled = list(LeaderboardEntry.objects.order_by("?").values_list("pk", flat=True)[:samples])
    for pk in sampled:
        entry = LeaderboardEntry.objects.select_related("config", "hardware").get(pk=pk)
        if verdict_columns:
            from leaderboard.services.board import rerank

            ranked_rows += LeaderboardEntry.objects.filter(ranking_key=entry.ranking_key).count()
            reranked += rerank(ranking_key=entry.ranking_key)
            entry.refresh_from_db()
        before = {name: getattr(entry, name) for name in fields}
        services.refresh_leaderboard_entry(
            config=entry.config, hardware=entry.hardware, engine_release=entry.engine_release
        )
        fresh = LeaderboardEntry.objects.get(pk=pk)
        wrong = [name for name in fields if not _same(before[name], getattr(fresh, name))]
        for name in wrong:
            differing[name] = differing.get(name, 0) + 1
        mismatches += bool(wrong)
    found: dict[str, object] = {
        f"rows that differ from services.refresh_leaderboard_entry (of {len(sampled)}, "
        f"{len(fields)} columns)": f"{mismatches}"
        + (
            f" ({', '.join(f'{k}: {v}' for k, v in sorted(differing.items()))})"
            if differing
            else ""
        )
    }
    if verdict_columns:
        found[
            f"rows whose rank or tie labels services.board.rerank changed (of {ranked_rows} in "
            f"the {len(sampled)} sampled rows' rankings)"
        ] = reranked
    return found


# What a browser's requests say they accept (Chromium's Accept-Encoding).
GZIP_ACCEPTED = {"Accept-Encoding": "gzip, deflate, br, zstd"}


def wrk(
    url: str, *, seconds: int, connections: int, timeout_s: int = 10, headers: dict | None = None
) -> dict:
    threads = min(2, connections)
    sent = [f"--header={name}: {value}" for name, value in (headers or {}).items()]
    output = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", *sent]
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


def warm(url: str, *, connections: int, attempts: int = 8) -> None:
    """Load a page until every web process has computed what it keeps (its first request of a
    page computes the row set's reads, which take seconds on a large board): rounds of
    `connections` requests at once, each waited for to the end (none cut off, as a timed wrk round
    would), until a whole round answers in under a second; then 2 s of wrk for the connections
    themselves."""
    import httpx

    def one(client: httpx.Client) -> float:
        started = time.monotonic()
        client.get(url, timeout=120)
        return time.monotonic() - started

    for _ in range(attempts):
        with httpx.Client() as client, ThreadPoolExecutor(max_workers=connections) as pool:
            slowest = max(pool.map(lambda _: one(client), range(connections * 2)))
        if slowest < 1.0:
            break
    wrk(url, seconds=2, connections=connections, timeout_s=60)


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


def submission_body(index: int, hardware: str) -> dict:
    """The `index`th submission: each its own config (8 to 1,007 tokens, 1 to 512 threads: 512,000
    of them), within the tiny model's 4,096-token context however many are sent."""
    config = {
        "target_model": "tiny-qwen3.gguf",
        "protocol": {"name": "quick", "n_predict": 8 + index % 1000, "runs": 1, "warmup": 0},
        "threads": 1 + index // 1000 % 512,
    }
    return {"hardware": hardware, "config": config}


async def submit_many(
    base: str,
    tokens: list[str],
    hardware: str,
    count: int,
    *,
    client: str = "light",
    first: int = 0,
) -> list:
    """`count` API submissions from one client per token (its own account), all at once: the
    `first`th config (`submission_body`) and those after it.

    The light client (the default) writes each request on its own connection and reads the
    status line: on a machine of few cores the clients share the CPU with the server, and
    httpx's client costs a sizeable part of what the server spends on a submission, so the
    figure would measure the clients too. `client="httpx"` measures the earlier way."""
    statuses: list[int] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(first, first + count):
        queue.put_nowait(index)
    host, port = base.removeprefix("http://").split(":")

    async def light(token: str, body: bytes) -> int:
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            (
                f"POST /api/v1/submissions HTTP/1.1\r\nHost: {host}\r\n"
                f"Authorization: Token {token}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode()
            + body
        )
        status_line = await reader.readline()
        await reader.read()  # to the end: the server closes after its answer
        writer.close()
        return int(status_line.split()[1])

    async def client_loop(session, token: str) -> None:
        while not queue.empty():
            body = submission_body(queue.get_nowait(), hardware)
            if session is None:
                statuses.append(await light(token, json.dumps(body).encode()))
                continue
            response = await session.post(
                f"{base}/api/v1/submissions",
                json=body,
                headers={"Authorization": f"Token {token}"},
            )
            statuses.append(response.status_code)

    if client == "light":
        await asyncio.gather(*(client_loop(None, token) for token in tokens))
        return statuses
    import httpx

    async with httpx.AsyncClient(timeout=60) as session:
        await asyncio.gather(*(client_loop(session, token) for token in tokens))
    return statuses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--configs", type=int, default=20_000)
    parser.add_argument("--hardware", type=int, default=50)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=15, help="wrk duration per page")
    parser.add_argument(
        "--gunicorn-workers",
        type=int,
        default=None,
        help="web processes (default: 3 sync workers; as deployed, gunicorn_conf's own)",
    )
    parser.add_argument(
        "--server",
        choices=("sync", "deployed"),
        default="sync",
        help="gunicorn's sync workers on leaderboard.wsgi (the figures before 2026-12-03), or "
        "the server as deployed: leaderboard.wsgi with leaderboard/web/gunicorn_conf.py",
    )
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument(
        "--submit-client",
        choices=("light", "httpx"),
        default="light",
        help="the submitting clients: raw HTTP on asyncio (light) or httpx's AsyncClient",
    )
    parser.add_argument("--start-samples", type=int, default=50)
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/specboard_bench"
    )
    parser.add_argument("--reuse", action="store_true", help="keep the seeded database")
    parser.add_argument(
        "--pages-only", action="store_true", help="measure the pages; skip submissions and workers"
    )
    parser.add_argument(
        "--writes-only",
        action="store_true",
        help="measure the submissions and the workers' start; skip the pages",
    )
    parser.add_argument(
        "--seed-only",
        action="store_true",
        help="seed (or check) the database and stop: no server, no measurement",
    )
    parser.add_argument(
        "--write-every",
        type=float,
        default=1.0,
        help="seconds between simulated recorded runs in the pages-under-writes figures",
    )
    args = parser.parse_args()
    if args.gunicorn_workers is None:
        from leaderboard.web.gunicorn_conf import default_workers

        args.gunicorn_workers = default_workers() if args.server == "deployed" else 3
    ensure_wrk()

    scratch, models_dir, redis_server, redis_port = scratch_with_redis(prefix="specboard-site-")
    broker_url = f"redis://127.0.0.1:{redis_port}/0"
    environment = os.environ | {
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
        "DATABASE_URL": args.database_url,
        "CELERY_BROKER_URL": broker_url,
        # Several web processes share one cache, as the server insists outside DEBUG
        # (leaderboard/web/gunicorn_conf.py): throttles, cached pages and who computes them.
        "CACHE_URL": f"redis://127.0.0.1:{redis_port}/1",
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
    from runner.provenance import cpu_name

    call_command("migrate", verbosity=0)
    user_model = get_user_model()
    owner, _ = user_model.objects.get_or_create(username="site-load")
    if not Run.objects.exists():
        seed(runs=args.runs, configs=args.configs, hardware_kinds=args.hardware)
    checked = check_entries_match_the_service(samples=20)
    figures: dict[str, object] = {
        "runs": Run.objects.count(),
        "leaderboard rows": LeaderboardEntry.objects.count(),
        **checked,
    }
    if args.seed_only:
        for name, value in figures.items():
            print(f"{name}: {value}")
        return 0
    services.register_model(path="tiny-qwen3.gguf")
    local = services.register_hardware(
        gpu_name="CPU site bench", slug=f"site-{uuid.uuid4().hex[:6]}", cpu_model=cpu_name()
    )
    # One account per client, as a community's submitters are: each account's allowance and
    # its submissions' lock are its own (one account cannot send thousands a minute under any
    # rate a deployment would set; the bench lifts the rate to measure capacity, not policy). New
    # accounts each run: an account's allowance is read from its jobs of the last day, and a
    # reused database's accounts would carry every earlier run's thousands.
    run = uuid.uuid4().hex[:6]
    tokens = [
        issue_api_token(
            user=user_model.objects.get_or_create(username=f"site-load-{run}-{index}")[0],
            name="site bench",
        ).key
        for index in range(args.connections)
    ]

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    if args.server == "deployed":
        # As deployed (leaderboard/web/gunicorn_conf.py: threaded workers, keep-alive), its
        # access log thrown away.
        command = ["leaderboard.wsgi", "-c", "python:leaderboard.web.gunicorn_conf"]
        command += ["--access-logfile", "/dev/null", "--log-level", "warning"]
    else:
        command = ["leaderboard.wsgi", "--log-level", "warning"]
        command += ["--workers", str(args.gunicorn_workers)]
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", *command, "--bind", f"127.0.0.1:{port}"],
        env=environment
        | {"DJANGO_SETTINGS_MODULE": "bench.site.settings"}
        | {"WEB_WORKERS": str(args.gunicorn_workers)},
        cwd=REPOSITORY,
    )
    figures["web server"] = f"gunicorn {command[0]}, {args.gunicorn_workers} " + (
        "threaded workers (gunicorn_conf.py)" if args.server == "deployed" else "sync workers"
    )
    processes = [server]
    try:
        wait_for_http(f"{base}/api/v1/leaderboard")
        measured, speedup, cold = (
            ({}, float("nan"), {}) if args.writes_only else measure_pages(base, args)
        )
        if args.pages_only:
            report(figures, measured, speedup, cold, args)
            return 0

        # The jobs earlier runs left (thousands each, cancelled at the end) as autovacuum would
        # have left them: a machine may run PostgreSQL without it, and then the jobs table, read by
        # every submission's allowance and place, is never analyzed and grows dead rows.
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE leaderboard_job")
        # Configs this database has not seen (a seeded database is reused: the same configs
        # again would each be found, not stored), the first of them on a hardware kind of their
        # own: a web process's first submissions load what a submission needs (its broker
        # connection, the serializers), so they are sent first, as the pages are warmed before
        # they are timed, and the figure is the server's throughput, not its start.
        first = random.Random().randrange(0, 400_000)
        warm_up = services.register_hardware(
            gpu_name="CPU site bench warm-up", slug=f"{local.slug}-warm", cpu_model=cpu_name()
        )
        warm_ups = 3 * len(tokens)
        asyncio.run(
            submit_many(
                base, tokens, warm_up.slug, warm_ups, client=args.submit_client, first=first
            )
        )
        started = time.monotonic()
        statuses = asyncio.run(
            submit_many(
                base,
                tokens,
                local.slug,
                args.submissions,
                client=args.submit_client,
                first=first + warm_ups,
            )
        )
        submit_seconds = time.monotonic() - started
        import redis

        queued = redis.Redis.from_url(broker_url).llen(local.queue_name)
        in_database = Job.objects.filter(hardware=local).count()
        accepted = statuses.count(201)
        refused = len(statuses) - accepted

        # An idle worker: a db worker and a GPU worker on a real llama-server, one job at a time.
        from leaderboard.messaging.workers import db_worker_argv, gpu_worker_argv

        host, key = services.ensure_gpu_host(name=f"bench-{local.slug}", hardware_slug=local.slug)
        gpu_host_environment = {"SPECBOARD_HOST_NAME": host.name, "SPECBOARD_HOST_KEY": key}
        redis.Redis.from_url(broker_url).delete(local.queue_name, warm_up.queue_name)
        Job.objects.filter(hardware__in=[local, warm_up]).update(status=Job.Status.CANCELLED)
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
                    hardware_slug=local.slug, hostname="gpu-site@%h", loglevel="WARNING"
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
        f"{queued} in the broker; lost {accepted - min(in_database, queued)} "
        f"({args.submit_client} client)"
        + (f"; refused {dict(Counter(s for s in statuses if s != 201))}" if refused else "")
    )
    figures["idle worker start latency, submission to claim"] = (
        f"median {statistics.median(latencies) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms over {len(latencies)} jobs"
    )
    report(figures, measured, speedup, cold, args)
    return 0


def measure_pages(base: str, args) -> tuple[dict, float, dict]:
    """The pages as served: cached, uncached, the answer pages, under writes, the read-time
    aggregate; and in process, what a cache miss costs."""
    site = {
        "API leaderboard, first page (as served, cached per board version)": (
            f"{base}/api/v1/leaderboard"
        ),
        "HTML leaderboard (as served, cached per board version)": f"{base}/",
        "first page from the maintained rows, uncached": f"{base}/bench/maintained-leaderboard",
    }
    measured = {}
    for name, url in site.items():
        warm(url, connections=4)
        measured[name] = wrk(url, seconds=args.seconds, connections=args.connections)
        log(f"{name}: {measured[name]}")
    # The two cached pages as browsers, httpx and requests ask for them: gzipped (a tenth to a
    # twentieth of the bytes, compressed once per page: leaderboard.compression). The figures
    # above, and the targets, are wrk's own requests, which ask for no coding.
    for name, url in list(site.items())[:2]:
        label = f"{name.split(' (')[0]}, gzip accepted (as served, cached per board version)"
        measured[label] = wrk(
            url, seconds=args.seconds, connections=args.connections, headers=GZIP_ACCEPTED
        )
        log(f"{label}: {measured[label]}")
    # The answer pages, as served (none is cached whole; what their selectors cache is).
    # They take tenths of a second to seconds: as with the read-time page, one connection
    # per worker, since 32 would leave a backlog that the next page's figures would pay.
    answers = answer_pages()
    for name, path in answers.items():
        label = f"{name} (as served, {args.gunicorn_workers} connections)"
        warm(base + path, connections=args.gunicorn_workers)
        measured[label] = wrk(
            base + path,
            seconds=args.seconds,
            connections=args.gunicorn_workers,
            timeout_s=60,
        )
        log(f"{label}: {measured[label]}")
    # This process records runs and measures misses in process from here on, as a db worker
    # and a web process do: what it loaded is frozen out of the collector's full collections,
    # as the web processes freeze theirs (leaderboard.collector).
    gc.freeze()
    # The same two pages while results keep arriving: each recorded run raises the board
    # version, and every web process pays one cache miss for it.
    for name, url in list(site.items())[:2]:
        with board_changes(every_s=args.write_every):
            figure = wrk(url, seconds=args.seconds, connections=args.connections)
        label = f"{name.split(' (')[0]}, a run recorded every {args.write_every:g} s"
        measured[label] = figure
        log(f"{label}: {figure}")
    # What a whole recompute costs, in process, while the server is idle (the read-time page
    # below leaves its workers busy for seconds after wrk stops).
    cold = cache_miss_costs(pages=answers)
    cold |= recorded_run_miss_costs()
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
    # wrk left its last requests unanswered, but PostgreSQL goes on with their GROUP BY (seconds
    # each on a large board) until it has rows to send: what is measured next (the submissions)
    # would share the CPU with it.
    waited = wait_for_idle_database(timeout_s=120)
    log(f"waited {waited:.1f} s for the read-time page's queries to end")
    maintained = measured["first page from the maintained rows, uncached"]
    aggregated = measured[aggregated_name]
    # No finished request leaves the ratio unknown, not infinite.
    speedup = (
        maintained["requests_per_s"] / aggregated["requests_per_s"]
        if aggregated["requests_per_s"]
        else float("nan")
    )
    return measured, speedup, cold


def wait_for_idle_database(*, timeout_s: float) -> float:
    """Wait until no other connection to this database runs a query (at most `timeout_s`);
    the seconds waited."""
    from django.db import connection

    started = time.monotonic()
    with connection.cursor() as cursor:
        while time.monotonic() - started < timeout_s:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND state = 'active' AND pid <> pg_backend_pid()"
            )
            if not cursor.fetchone()[0]:
                break
            time.sleep(0.2)
    return time.monotonic() - started


@contextmanager
def board_changes(*, every_s: float):
    """Record a run every `every_s` seconds while in the block, as the db worker does: one
    leaderboard row, picked at random, derived again from its runs by
    `services.refresh_leaderboard_entry` (its ranking reranked, the board's counter and that
    ranking's version raised), on this bench's own thread and database connection."""
    from django.db import connection

    from leaderboard import services
    from leaderboard.models import LeaderboardEntry

    stop = threading.Event()
    rng = random.Random(11)
    ids = list(LeaderboardEntry.objects.values_list("pk", flat=True)[:200_000])

    def keep_changing() -> None:
        while not stop.wait(every_s):
            row = LeaderboardEntry.objects.select_related("config", "hardware").get(
                pk=rng.choice(ids)
            )
            services.refresh_leaderboard_entry(
                config=row.config, hardware=row.hardware, engine_release=row.engine_release
            )
        connection.close()

    changer = threading.Thread(target=keep_changing, daemon=True)
    changer.start()
    try:
        yield
    finally:
        stop.set()
        changer.join()


def answer_pages() -> dict[str, str]:
    """The answer pages at this scale: the model page with its draft advice for the first
    target, /best/ for it with 24 GB, /nmax/ for the widest sweep, /concurrency/."""
    from leaderboard import selectors

    target, hardware = selectors.nmax_choices()["first"] or ("target-0", "gpu-0")
    return {
        "model page with draft advice": f"/models/{target}/",
        "/best/ (target, 24 GB)": f"/best/?target={target}&memory_gb=24",
        "/nmax/ (target, hardware)": f"/nmax/?target={target}&hardware={hardware}",
        "/concurrency/": "/concurrency/",
    }


def cache_miss_costs(samples: int = 7, pages: dict[str, str] | None = None) -> dict[str, dict]:
    """Ms of one request right after the board changed anywhere (a change that names no
    ranking: every kept page is computed again, the worst a recorded run can cost a page), in
    process: every sample's, for the median and the worst; and one more miss's queries. Rows
    kept by their content (`selectors.content_cached`) stay kept: nothing in them changed."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from leaderboard import services

    client = Client(HTTP_HOST="127.0.0.1")
    costs = {}
    every = {"API first page": "/api/v1/leaderboard", "HTML leaderboard": "/"} | (pages or {})
    for name, url in every.items():
        timings = []
        client.get(url)  # the process's first request of the page (imports, templates)
        for _ in range(samples):
            services.raise_board_version()
            started = time.perf_counter()
            response = client.get(url)
            timings.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        # The queries of one more miss, and the slowest of them (where a page's time goes).
        services.raise_board_version()
        with CaptureQueriesContext(connection) as captured:
            client.get(url)
        slowest = max(captured.captured_queries, key=lambda q: float(q["time"]), default=None)
        costs[name] = {
            "timings": timings,
            "queries": len(captured.captured_queries),
            "slowest_ms": float(slowest["time"]) * 1000 if slowest else 0.0,
            "slowest_sql": slowest["sql"][:300] if slowest else "",
        }
    return costs


def recorded_run_miss_costs(samples: int = 7) -> dict[str, dict]:
    """Ms of one request right after a run was recorded in a ranking the page shows (the miss a
    recorded run can cost these pages; one in another ranking costs them none), in process.

    Each sample records a run: a copy of a first-page row's best run, its decode and end-to-end
    means 1% faster, inserted and its row derived again by `services.refresh_leaderboard_entry`
    (its ranking reranked, that ranking's version raised), as the db worker does; the request
    after it is timed. The copies are deleted and their rows derived again afterwards."""
    from django.test import Client

    from leaderboard import selectors, services
    from leaderboard.models import LeaderboardEntry, Run

    client = Client(HTTP_HOST="127.0.0.1")
    shown = list(selectors.leaderboard_entries(ranked_only=True).select_related(None)[:50])
    rng = random.Random(5)
    costs: dict[str, dict] = {}
    added: list[Run] = []
    try:
        for name, url in {"API first page": "/api/v1/leaderboard", "HTML leaderboard": "/"}.items():
            timings = []
            client.get(url)
            for _ in range(samples):
                row = LeaderboardEntry.objects.select_related("config", "hardware", "best_run").get(
                    pk=rng.choice(shown).pk
                )
                run = row.best_run
                run.pk = None
                run.job = None
                for field in ("decode_mean", "decode_median", "e2e_mean", "e2e_median"):
                    if getattr(run, field) is not None:
                        setattr(run, field, getattr(run, field) * 1.01)
                run.save()
                added.append(run)
                services.refresh_leaderboard_entry(
                    config=row.config, hardware=row.hardware, engine_release=row.engine_release
                )
                started = time.perf_counter()
                response = client.get(url)
                timings.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, (url, response.status_code)
            costs[f"{name}, a run recorded in its rankings"] = {"timings": timings}
    finally:
        touched = {(run.config_id, run.hardware_id, run.engine_release) for run in added}
        Run.objects.filter(pk__in=[run.pk for run in added]).delete()
        for config_id, hardware_id, release in touched:
            row = LeaderboardEntry.objects.select_related("config", "hardware").get(
                config_id=config_id, hardware_id=hardware_id, engine_release=release
            )
            services.refresh_leaderboard_entry(
                config=row.config, hardware=row.hardware, engine_release=release
            )
    return costs


def report(figures: dict, measured: dict, speedup: float, cold: dict, args) -> None:
    figures["connections"] = f"{args.connections} (the read-time page: {args.gunicorn_workers})"
    for name, figure in measured.items():
        figures[name] = (
            f"p50 {figure['p50_ms']:.1f} ms, p99 {figure['p99_ms']:.1f} ms, "
            f"{figure['requests_per_s']:.0f} requests/s, {figure['errors']} errors"
        )
    for name, cost in cold.items():
        timings = cost["timings"]
        if "queries" not in cost:  # recorded_run_miss_costs
            figures[f"{name}: the first request after it (cache miss, in process)"] = (
                f"median {statistics.median(timings):.0f} ms, max {max(timings):.0f} ms "
                f"of {len(timings)}"
            )
            continue
        figures[f"{name}, first request after a recorded run (cache miss, in process)"] = (
            f"median {statistics.median(timings):.0f} ms, max {max(timings):.0f} ms "
            f"of {len(timings)}; {cost['queries']} queries, the slowest "
            f"{cost['slowest_ms']:.0f} ms"
        )
        log(f"{name}: slowest query of a miss: {cost['slowest_sql']}")
    figures["maintained rows vs read-time aggregation, both uncached (requests/s ratio)"] = (
        f"{speedup:.1f}x"
    )
    for name, value in figures.items():
        print(f"{name}: {value}")
    if not measured:  # --writes-only
        return
    api = measured["API leaderboard, first page (as served, cached per board version)"]
    html = measured["HTML leaderboard (as served, cached per board version)"]
    print(f"api_p99_ms={api['p99_ms']:.1f}")
    print(f"html_p99_ms={html['p99_ms']:.1f}")
    print(f"aggregate_ratio={speedup:.1f}")


if __name__ == "__main__":
    sys.exit(main())
