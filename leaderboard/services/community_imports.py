"""Community imports: the seed kit's leaderboard_runs.csv as self-reported results.

Rows are end-to-end tok/s (completion tokens over client wall time), each paired with the
baseline run of its own target: the one the uploader names, or the one run name without a
speculative marker. Every number is checked at the door (finite and bounded) and no text may hold
a NUL character, so whatever an import stores, every page and API resource can show. The configs'
protocol is `seed-csv`, not `quick`: the kit's rows stopped before their token budget. A row's
figures must be its own samples' (count, mean, median, min, max, each sample its tokens over its
seconds, and the totals), or the file is refused, naming the line and the figure."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from leaderboard.models import SELF_REPORTED_RELEASE, Config, Hardware, Run
from leaderboard.services.board import refresh_leaderboard_entry
from leaderboard.services.configs import (
    SEED_CSV_SOURCE,
    digest,
    imported_config,
    reporter_identity,
)
from leaderboard.services.errors import CsvImportError
from leaderboard.services.registry import register_hardware
from leaderboard.services.results import record_run
from runner.stats import summarize

SEED_CSV_COLUMNS = (
    "run_name", "api", "model", "runs", "avg_tps", "median_tps", "min_tps", "max_tps",
    "total_tokens", "total_elapsed_s", "samples", "sample_tokens", "sample_elapsed_s",
    "prompt_preview", "draft_tokens", "draft_accepted",
)  # fmt: skip

# Bounds far beyond any real run, so that every stored figure stays finite through its sums.
MAX_TOKENS_PER_SECOND = 1e6
MAX_TOKEN_COUNT = 10**9
MAX_SAMPLES = 100_000
MAX_SECONDS = 1e7
MAX_NAME_LENGTH = 200

_SPEED_COLUMNS = ("avg_tps", "median_tps", "min_tps", "max_tps")
_COUNT_COLUMNS = ("total_tokens", "draft_tokens", "draft_accepted")
_LIST_BOUNDS = {
    "samples": MAX_TOKENS_PER_SECOND,
    "sample_tokens": MAX_TOKEN_COUNT,
    "sample_elapsed_s": MAX_SECONDS,
}

# A run name with one of these markers is a speculative config, not the uploader's baseline.
_SPECULATIVE_MARKER = re.compile(r"draft|dflash|mtp|eagle|ngram|spec|lookup", re.IGNORECASE)


@dataclass
class ImportReport:
    """What an import of a results file created; `baselines` maps each target to its baseline."""

    hardware: Hardware
    baseline_run_name: str
    runs_created: int = 0
    runs_skipped: int = 0
    configs: list[Config] = field(default_factory=list)
    baselines: dict[str, str] = field(default_factory=dict)


@dataclass
class _TargetRows:
    """One target model's rows of a file, with the run name of its baseline."""

    target: str
    baseline_name: str
    rows: list[dict]


def _refused(line: int, message: str) -> CsvImportError:
    return CsvImportError({"file": [f"line {line}: {message}"]})


def _bounded(value: Any, *, limit: float, column: str, line: int, whole: bool = False) -> float:
    """A number of the file: finite, from 0 to `limit`, and whole where it counts something."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _refused(line, f"{column} must be a number")
    # Compared before any conversion: a huge integer or an overflowed float (1e999 is infinity)
    # fails here, and so does NaN, which compares false with everything.
    if not 0 <= value <= limit:
        raise _refused(line, f"{column} must be a finite, positive number of at most {limit:g}")
    if whole and value != int(value):
        raise _refused(line, f"{column} must be a whole number")
    return float(value)


def _refuse_constant(name: str) -> float:
    raise ValueError(name)


def _number_list(value: str, column: str, line: int) -> list[float]:
    try:
        parsed = json.loads(value, parse_constant=_refuse_constant) if value.strip() else []
    except (ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, list):
        raise _refused(line, f"{column} is not a JSON list of numbers")
    if len(parsed) > MAX_SAMPLES:
        raise _refused(line, f"{column} holds more than {MAX_SAMPLES} values")
    whole = column == "sample_tokens"
    return [
        _bounded(item, limit=_LIST_BOUNDS[column], column=column, line=line, whole=whole)
        for item in parsed
    ]


def _text(row: dict, column: str, line: int, *, limit: int | None = None) -> str:
    value = (row.get(column) or "").strip()
    if limit is not None and len(value) > limit:
        raise _refused(line, f"{column} is longer than {limit} characters")
    return value


def _refuse_nul(row: dict, line: int) -> None:
    """Refuse a row with a NUL character, which PostgreSQL cannot store in text or JSON."""
    for column, value in row.items():
        texts = value if isinstance(value, list) else [value]
        if any(isinstance(text, str) and "\x00" in text for text in texts):
            raise _refused(line, f"{column or 'a cell'} contains a NUL character")


def _parse_seed_row(row: dict, line: int) -> dict:
    _refuse_nul(row, line)
    run_name = _text(row, "run_name", line, limit=MAX_NAME_LENGTH)
    if not run_name:
        raise _refused(line, "run_name is empty")
    parsed: dict[str, Any] = {
        "run_name": run_name,
        "model": _text(row, "model", line, limit=MAX_NAME_LENGTH),
        "prompt_preview": (row.get("prompt_preview") or "")[:2000],
        **_seed_figures(row, line),
    }
    parsed["sample_tokens"] = [int(tokens) for tokens in parsed["sample_tokens"]]
    if problem := _row_problem(parsed, given={c for c in row if (row.get(c) or "").strip()}):
        raise _refused(line, problem)
    return parsed


def _seed_figures(row: dict, line: int) -> dict[str, Any]:
    """A row's numeric columns, each within its bounds, and its sample lists."""

    def number(column: str, limit: float, whole: bool = False) -> float:
        return _seed_number(row, column, line, limit=limit, whole=whole)

    return {
        **{c: number(c, MAX_TOKENS_PER_SECOND) for c in _SPEED_COLUMNS},
        "total_elapsed_s": number("total_elapsed_s", MAX_SECONDS),
        "runs": int(number("runs", MAX_SAMPLES, whole=True)),
        **{c: int(number(c, MAX_TOKEN_COUNT, whole=True)) for c in _COUNT_COLUMNS},
        **{c: _number_list(row.get(c) or "", c, line) for c in _LIST_BOUNDS},
    }


def _seed_number(row: dict, column: str, line: int, *, limit: float, whole: bool) -> float:
    """A numeric cell (empty is 0), within its bounds."""
    try:
        value = float(row.get(column) or 0)
    except (TypeError, ValueError):
        raise _refused(line, f"{column} must be a number") from None
    return _bounded(value, limit=limit, column=column, line=line, whole=whole)


def _row_problem(parsed: dict, *, given: set[str]) -> str | None:
    """Why a parsed row's figures cannot be a run's: not positive, more accepted than drafted,
    or a summary its own samples do not give (`_samples_problem`)."""
    if parsed["avg_tps"] <= 0 or parsed["runs"] < 1:
        return "runs and avg_tps must be positive"
    if parsed["draft_accepted"] > parsed["draft_tokens"]:
        return "draft_accepted is larger than draft_tokens"
    return _samples_problem(parsed, given=given)


# The kit writes its figures with 10 decimals: a claim within this of the samples' is theirs.
_FIGURE_TOLERANCE = {"rel_tol": 1e-8, "abs_tol": 1e-6}


def _samples_problem(parsed: dict, *, given: set[str]) -> str | None:
    """Whether a row's summary is what its own samples give: runs is their count, avg, median,
    min and max tok/s their figures, each sample its tokens over its seconds, and the totals
    their sums (a column the row leaves empty claims nothing)."""
    samples, tokens, seconds = (
        parsed["samples"],
        parsed["sample_tokens"],
        parsed["sample_elapsed_s"],
    )
    if not samples:
        return None
    if parsed["runs"] != len(samples):
        return f"runs is {parsed['runs']}, but samples holds {len(samples)}"
    return (
        _figures_problem(parsed, given=given)
        or _lengths_problem(samples, tokens, seconds)
        or _per_sample_problem(samples, tokens, seconds)
        or _totals_problem(parsed, given=given)
    )


def _figures_problem(parsed: dict, *, given: set[str]) -> str | None:
    """Whether the row's avg, median, min and max tok/s are its samples' figures."""
    figures = summarize(parsed["samples"])
    for column, name in (("avg_tps", "mean"), ("median_tps", "median"), ("min_tps", "min"),
                         ("max_tps", "max")):  # fmt: skip
        # Samples are given (`_samples_problem`), so each figure is a number.
        figure = cast(float, figures[name])
        if column in given and not math.isclose(parsed[column], figure, **_FIGURE_TOLERANCE):
            return (
                f"{column} is {parsed[column]:g}, but its samples' {name} is {figures[name]:.10g}"
            )
    return None


def _lengths_problem(samples: list, tokens: list, seconds: list) -> str | None:
    """Whether the per-sample tokens and seconds, where given, are one per sample."""
    for column, values in (("sample_tokens", tokens), ("sample_elapsed_s", seconds)):
        if values and len(values) != len(samples):
            return f"{column} holds {len(values)} values, but samples holds {len(samples)}"
    return None


def _per_sample_problem(samples: list, tokens: list, seconds: list) -> str | None:
    """Whether each sample is its tokens over its seconds, where both are given."""
    if not (tokens and seconds):
        return None
    for index, (sample, count, elapsed) in enumerate(zip(samples, tokens, seconds, strict=True)):
        if not elapsed or not math.isclose(sample, count / elapsed, **_FIGURE_TOLERANCE):
            return (
                f"samples[{index}] is {sample:g} tok/s, but its {count} tokens in "
                f"{elapsed:g} s give {count / elapsed if elapsed else float('inf'):.10g}"
            )
    return None


def _totals_problem(parsed: dict, *, given: set[str]) -> str | None:
    """Whether the row's total tokens and seconds are its samples' sums, where it gives them."""
    for column, values in (
        ("total_tokens", parsed["sample_tokens"]),
        ("total_elapsed_s", parsed["sample_elapsed_s"]),
    ):
        if (
            values
            and column in given
            and not math.isclose(parsed[column], sum(values), **_FIGURE_TOLERANCE)
        ):
            return f"{column} is {parsed[column]:g}, but its samples sum to {sum(values):.10g}"
    return None


def _csv_text(content: bytes | str) -> str:
    """The file as text: UTF-8, a byte-order mark dropped."""
    if isinstance(content, str):
        return content
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CsvImportError({"file": ["the file is not UTF-8 text"]}) from None


def _read_seed_csv(content: bytes | str) -> list[tuple[int, dict]]:
    """The file's rows, validated, each with the line it ends on."""
    content = _csv_text(content)
    # A cell may hold a list of up to MAX_SAMPLES numbers, more than the csv module's default
    # field limit (128 KiB); the file as a whole is bounded by SPECBOARD_MAX_IMPORT_BYTES.
    if csv.field_size_limit() < settings.SPECBOARD_MAX_IMPORT_BYTES:
        csv.field_size_limit(settings.SPECBOARD_MAX_IMPORT_BYTES)
    reader = csv.DictReader(io.StringIO(content))
    try:
        missing = [c for c in SEED_CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise CsvImportError({"file": [f"missing columns: {', '.join(missing)}"]})
        rows = [(reader.line_num, _parse_seed_row(row, reader.line_num)) for row in reader]
    except csv.Error as error:
        raise _refused(reader.line_num, f"not a readable CSV file: {error}") from None
    if not rows:
        raise CsvImportError({"file": ["the file holds no result rows"]})
    return rows


def _choose_baseline_name(names: list[str], chosen: str | None, *, target: str = "") -> str:
    if chosen:
        if chosen not in names:
            raise CsvImportError(
                {"baseline_run_name": [f"{chosen!r} is not a run_name in the file"]}
            )
        return chosen
    candidates = [name for name in names if not _SPECULATIVE_MARKER.search(name)]
    if len(candidates) != 1:
        found = ", ".join(candidates) or "none"
        of_target = f"of target {target!r} " if target else ""
        raise CsvImportError(
            {
                "baseline_run_name": [
                    f"name the baseline run {of_target}(plain decoding); candidates: {found}"
                ]
            }
        )
    return candidates[0]


def _declared_target(row: dict) -> str | None:
    """The target a row's model column names; the kit writes the run name there by default."""
    model = row["model"]
    return model if model and model != row["run_name"] else None


def _target_rows(
    lines: list[tuple[int, dict]], *, target_name: str | None, baseline_run_name: str | None
) -> list[_TargetRows]:
    """The file's rows by target model, each target with its own baseline.

    The kit's `model` column is the name it asked the server for, the run name unless the user
    gave another: a file whose model column names one target (or none) is one target's results;
    one that names several pairs each target's rows with that target's own baseline."""
    rows = [row for _, row in lines]
    declared = list(dict.fromkeys(t for row in rows if (t := _declared_target(row))))
    if len(declared) <= 1:
        names = list(dict.fromkeys(row["run_name"] for row in rows))
        baseline = _choose_baseline_name(names, baseline_run_name)
        target = (target_name or "").strip() or (declared[0] if declared else baseline)
        return [_TargetRows(target=target[:MAX_NAME_LENGTH], baseline_name=baseline, rows=rows)]
    _refuse_mixed_targets(lines, declared=declared, target_name=target_name)
    return _per_target(rows, declared=declared, baseline_run_name=baseline_run_name)


def _per_target(
    rows: list[dict], *, declared: list[str], baseline_run_name: str | None
) -> list[_TargetRows]:
    """The rows of a file that names several targets, by target, each with its own baseline
    (the one named, where it is that target's)."""
    every_name = {row["run_name"] for row in rows}
    if baseline_run_name and baseline_run_name not in every_name:
        _choose_baseline_name(sorted(every_name), baseline_run_name)
    groups = []
    for target in declared:
        own = [row for row in rows if row["model"] == target]
        names = list(dict.fromkeys(row["run_name"] for row in own))
        chosen = baseline_run_name if baseline_run_name in names else None
        baseline = _choose_baseline_name(names, chosen, target=target)
        groups.append(_TargetRows(target=target, baseline_name=baseline, rows=own))
    return groups


def _refuse_mixed_targets(
    lines: list[tuple[int, dict]], *, declared: list[str], target_name: str | None
) -> None:
    """A file that names several targets is imported as each of them: no one target can be
    given for it, and each of its rows must name one of them."""
    targets = ", ".join(declared)
    if target_name and target_name.strip():
        raise CsvImportError(
            {"target_name": [f"the file's model column names several targets: {targets}"]}
        )
    if undeclared := [str(line) for line, row in lines if row["model"] not in declared]:
        raise CsvImportError(
            {
                "file": [
                    f"the file holds several target models ({targets}); line "
                    f"{', '.join(undeclared[:5])}: the model column names none of them"
                ]
            }
        )


def _reporter_identity(
    uploaded_by: User | None, rows: list[tuple[int, dict]], *, publish_name: bool
) -> str:
    """Who reported the rows: the uploader's account when they published their name, their
    pseudonym when not (`reporter_identity`), or for an anonymous import its file."""
    if uploaded_by is not None and uploaded_by.pk is not None:
        if publish_name:
            return f"user:{uploaded_by.pk}"
        pseudonym = reporter_identity(user=uploaded_by, publish_name=False)
        assert pseudonym is not None  # a saved account has one
        return pseudonym
    return f"file:{digest([row for _, row in rows])[:16]}"


def import_leaderboard_csv(
    *,
    content: bytes | str,
    hardware_name: str,
    uploaded_by: User | None = None,
    baseline_run_name: str | None = None,
    target_name: str | None = None,
    publish_name: bool = False,
) -> ImportReport:
    """Import the seed kit's leaderboard_runs.csv as self-reported, end-to-end tok/s results
    (the uploader's user name is shown in provenance only when they chose to publish it)."""
    _refuse_request(
        content=content,
        hardware_name=hardware_name,
        baseline_run_name=baseline_run_name,
        target_name=target_name,
    )
    lines = _read_seed_csv(content)
    groups = _target_rows(lines, target_name=target_name, baseline_run_name=baseline_run_name)
    with transaction.atomic():
        reporter = _reporter_identity(uploaded_by, lines, publish_name=publish_name)
        hardware = register_hardware(gpu_name=hardware_name.strip()[:200], self_reported=True)
        report = ImportReport(
            hardware=hardware,
            baseline_run_name=", ".join(dict.fromkeys(g.baseline_name for g in groups)),
            baselines={group.target: group.baseline_name for group in groups},
        )
        for group in groups:
            configs = _target_configs(group, reporter=reporter)
            _import_rows(
                group,
                configs=configs,
                hardware=hardware,
                report=report,
                uploaded_by=uploaded_by if publish_name else None,
            )
            # The baseline first, so every paired row finds it when its speedup is computed.
            for config in configs.values():
                refresh_leaderboard_entry(
                    config=config, hardware=hardware, engine_release=SELF_REPORTED_RELEASE
                )
            report.configs.extend(configs.values())
    return report


def _refuse_request(
    *,
    content: bytes | str,
    hardware_name: str,
    baseline_run_name: str | None,
    target_name: str | None,
) -> None:
    """Raise CsvImportError for a field holding a NUL, no hardware named or a file too large."""
    typed = {
        "hardware": hardware_name,
        "baseline_run_name": baseline_run_name,
        "target_name": target_name,
    }
    for name, value in typed.items():
        if value and "\x00" in value:  # PostgreSQL cannot store it.
            raise CsvImportError({name: ["must not contain a NUL character"]})
    if not hardware_name.strip():
        raise CsvImportError({"hardware": ["name the hardware these results were measured on"]})
    if len(content) > settings.SPECBOARD_MAX_IMPORT_BYTES:
        raise CsvImportError(
            {"file": [f"the file is larger than {settings.SPECBOARD_MAX_IMPORT_BYTES} bytes"]}
        )


def _import_rows(
    group: _TargetRows,
    *,
    configs: dict[str, Config],
    hardware: Hardware,
    report: ImportReport,
    uploaded_by: User | None,
) -> None:
    """A target's rows as runs of their configs, each imported once (counted in `report`)."""
    for row in group.rows:
        config = configs[row["run_name"]]
        fingerprint = digest([hardware.slug, config.key, row])
        if Run.objects.filter(import_fingerprint=fingerprint).exists():
            report.runs_skipped += 1
            continue
        _create_imported_run(
            row, config=config, hardware=hardware, fingerprint=fingerprint, uploaded_by=uploaded_by
        )
        report.runs_created += 1


def _target_configs(group: _TargetRows, *, reporter: str) -> dict[str, Config]:
    """One config per run name of a target: the baseline's first, then those paired with it."""
    configs: dict[str, Config] = {}
    for name in dict.fromkeys([group.baseline_name, *(row["run_name"] for row in group.rows)]):
        configs[name] = imported_config(
            run_name=name,
            target_name=group.target,
            baseline=configs.get(group.baseline_name),
            prompt=group.rows[0]["prompt_preview"],
            reported_by=reporter,
        )
    return configs


def _create_imported_run(
    row: dict,
    *,
    config: Config,
    hardware: Hardware,
    fingerprint: str,
    uploaded_by: User | None,
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
                "predicted_n": tokens[i] if i < len(tokens) else 0,
                "wall_ms": elapsed[i] * 1000 if i < len(elapsed) else None,
                "end_to_end_tokens_per_second": value,
            }
            for i, value in enumerate(row["samples"])
        ),
        provenance={
            "source": SEED_CSV_SOURCE,
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
