"""Community imports: the seed kit's leaderboard_runs.csv as self-reported results.

Rows are end-to-end tok/s (completion tokens over client wall time), paired with the baseline
run the uploader names (or the one run name without a speculative marker)."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from leaderboard.models import (
    Config,
    Hardware,
    Run,
)
from leaderboard.services.board import refresh_leaderboard_entry
from leaderboard.services.configs import SELF_REPORTED_RELEASE, digest, imported_config
from leaderboard.services.errors import CsvImportError
from leaderboard.services.registry import register_hardware
from leaderboard.services.results import record_run
from runner.stats import summarize

SEED_CSV_COLUMNS = (
    "run_name", "api", "model", "runs", "avg_tps", "median_tps", "min_tps", "max_tps",
    "total_tokens", "total_elapsed_s", "samples", "sample_tokens", "sample_elapsed_s",
    "prompt_preview", "draft_tokens", "draft_accepted",
)  # fmt: skip


# A run name with one of these markers is a speculative config, not the uploader's baseline.
_SPECULATIVE_MARKER = re.compile(r"draft|dflash|mtp|eagle|ngram|spec|lookup", re.IGNORECASE)


@dataclass
class ImportReport:
    """What an import of a results file created."""

    hardware: Hardware
    baseline_run_name: str
    runs_created: int = 0
    runs_skipped: int = 0
    configs: list[Config] = field(default_factory=list)


def _number_list(value: str, column: str, line: int) -> list[float]:
    try:
        parsed = json.loads(value) if value.strip() else []
        if not isinstance(parsed, list):
            raise ValueError(column)
        return [float(item) for item in parsed]
    except (ValueError, TypeError):
        raise CsvImportError(
            {"file": [f"line {line}: {column} is not a JSON list of numbers"]}
        ) from None


def _parse_seed_row(row: dict, line: int) -> dict:
    def number(column: str) -> float:
        try:
            value = float(row.get(column) or 0)
        except (TypeError, ValueError):
            raise CsvImportError({"file": [f"line {line}: {column} must be a number"]}) from None
        if value != value or value in (float("inf"), float("-inf")) or value < 0:
            raise CsvImportError(
                {"file": [f"line {line}: {column} must be a finite, positive number"]}
            )
        return value

    run_name = (row.get("run_name") or "").strip()
    if not run_name:
        raise CsvImportError({"file": [f"line {line}: run_name is empty"]})
    parsed: dict[str, Any] = {
        "run_name": run_name[:200],
        "model": (row.get("model") or "").strip()[:200],
        "prompt_preview": (row.get("prompt_preview") or "")[:2000],
        **{
            c: number(c) for c in ("avg_tps", "median_tps", "min_tps", "max_tps", "total_elapsed_s")
        },
        **{c: int(number(c)) for c in ("runs", "total_tokens", "draft_tokens", "draft_accepted")},
        **{
            c: _number_list(row.get(c) or "", c, line)
            for c in ("samples", "sample_tokens", "sample_elapsed_s")
        },
    }
    if parsed["avg_tps"] <= 0 or parsed["runs"] < 1:
        raise CsvImportError({"file": [f"line {line}: runs and avg_tps must be positive"]})
    if parsed["draft_accepted"] > parsed["draft_tokens"]:
        raise CsvImportError({"file": [f"line {line}: draft_accepted is larger than draft_tokens"]})
    return parsed


def _read_seed_csv(content: bytes | str) -> list[dict]:
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise CsvImportError({"file": ["the file is not UTF-8 text"]}) from None
    try:
        reader = csv.DictReader(io.StringIO(content))
        missing = [c for c in SEED_CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise CsvImportError({"file": [f"missing columns: {', '.join(missing)}"]})
        rows = [_parse_seed_row(row, index + 2) for index, row in enumerate(reader)]
    except csv.Error as error:
        raise CsvImportError({"file": [f"not a readable CSV file: {error}"]}) from None
    if not rows:
        raise CsvImportError({"file": ["the file holds no result rows"]})
    return rows


def _choose_baseline_name(names: list[str], chosen: str | None) -> str:
    if chosen:
        if chosen not in names:
            raise CsvImportError(
                {"baseline_run_name": [f"{chosen!r} is not a run_name in the file"]}
            )
        return chosen
    candidates = [name for name in names if not _SPECULATIVE_MARKER.search(name)]
    if len(candidates) != 1:
        found = ", ".join(candidates) or "none"
        raise CsvImportError(
            {"baseline_run_name": [f"name the baseline run (plain decoding); candidates: {found}"]}
        )
    return candidates[0]


def import_leaderboard_csv(
    *,
    content: bytes | str,
    hardware_name: str,
    uploaded_by: AbstractBaseUser | None = None,
    baseline_run_name: str | None = None,
    target_name: str | None = None,
) -> ImportReport:
    """Import the seed kit's leaderboard_runs.csv as self-reported, end-to-end tok/s results."""
    if not hardware_name.strip():
        raise CsvImportError({"hardware": ["name the hardware these results were measured on"]})
    if len(content) > settings.SPECBOARD_MAX_IMPORT_BYTES:
        raise CsvImportError(
            {"file": [f"the file is larger than {settings.SPECBOARD_MAX_IMPORT_BYTES} bytes"]}
        )
    rows = _read_seed_csv(content)
    names = list(dict.fromkeys(row["run_name"] for row in rows))
    baseline_name = _choose_baseline_name(names, baseline_run_name)
    with transaction.atomic():
        hardware = register_hardware(gpu_name=hardware_name.strip()[:200], self_reported=True)
        report = ImportReport(hardware=hardware, baseline_run_name=baseline_name)
        target = (target_name or baseline_name).strip()[:200]
        prompt = rows[0]["prompt_preview"]
        baseline = imported_config(
            run_name=baseline_name, target_name=target, baseline=None, prompt=prompt
        )
        configs = {baseline_name: baseline}
        for name in names:
            if name != baseline_name:
                configs[name] = imported_config(
                    run_name=name, target_name=target, baseline=baseline, prompt=prompt
                )
        for row in rows:
            fingerprint = digest([hardware.slug, target, baseline_name, row])
            if Run.objects.filter(import_fingerprint=fingerprint).exists():
                report.runs_skipped += 1
                continue
            _create_imported_run(
                row,
                config=configs[row["run_name"]],
                hardware=hardware,
                fingerprint=fingerprint,
                uploaded_by=uploaded_by,
            )
            report.runs_created += 1
        # The baseline first, so every paired row finds it when its speedup is computed.
        for config in configs.values():
            refresh_leaderboard_entry(
                config=config, hardware=hardware, engine_release=SELF_REPORTED_RELEASE
            )
        report.configs = list(configs.values())
    return report


def _create_imported_run(
    row: dict,
    *,
    config: Config,
    hardware: Hardware,
    fingerprint: str,
    uploaded_by: AbstractBaseUser | None,
) -> Run:
    samples = summarize(row["samples"]) if row["samples"] else {}
    tokens, elapsed = row["sample_tokens"], row["sample_elapsed_s"]
    return record_run(
        config=config,
        hardware=hardware,
        engine_release=SELF_REPORTED_RELEASE,
        fields={
            "tps_definition": Run.Definition.END_TO_END,
            "n": samples.get("n") or row["runs"],
            "e2e_mean": row["avg_tps"],
            "e2e_median": row["median_tps"],
            "e2e_min": row["min_tps"],
            "e2e_max": row["max_tps"],
            "e2e_stdev": samples.get("stdev"),
            "e2e_ci95_low": samples.get("ci95_low"),
            "e2e_ci95_high": samples.get("ci95_high"),
            "acceptance_rate": row["draft_accepted"] / row["draft_tokens"]
            if row["draft_tokens"]
            else None,
            "draft_tokens": row["draft_tokens"],
            "draft_accepted": row["draft_accepted"],
        },
        requests=(
            {
                "index": i,
                "predicted_n": int(tokens[i]) if i < len(tokens) else 0,
                "wall_ms": float(elapsed[i]) * 1000 if i < len(elapsed) else None,
                "end_to_end_tokens_per_second": value,
            }
            for i, value in enumerate(row["samples"])
        ),
        provenance={
            "source": "seed-leaderboard-csv",
            "uploaded_by": getattr(uploaded_by, "username", None),
            "model": row["model"],
            "prompt_preview": row["prompt_preview"],
            "tokens_per_second_definition": "completion tokens / client wall time (end-to-end)",
        },
        raw_result=row,
        self_reported=True,
        fingerprint=fingerprint,
        run_name=row["run_name"],
    )
