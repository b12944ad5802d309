"""Config rows: the one place that turns a validated runner config (or a self-reported
identity) into a `Config` row with its label and its paired baseline.

Measured configs are keyed by the runner's config key; self-reported ones (seed CSV imports and
uploads) get keys of their own, so they never share a row with measured results. A self-reported
key carries who reported it, so two people who name the same GPU never share a row either: the
best-of rule only ever picks among one uploader's own batches. Who reported it is, as the key
knows them, the user name only when the uploader chose to publish it, else their pseudonym
(`reporter_identity`): keys are public, and a hash over a user name can be checked against every
user name. Published and unpublished results of one uploader are rows of their own."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from pathlib import Path
from typing import cast

from django.contrib.auth.models import User
from django.db.models import Model

from leaderboard.models import (
    SELF_REPORTED_UPLOAD_SOURCE,
    Config,
    ConfigSpecType,
    ModelFile,
    ReporterPseudonym,
)
from leaderboard.verdicts.series import option_words
from leaderboard.verdicts.workloads import SEED_CSV_PROTOCOL
from runner.config import BenchmarkConfig, parse_stored_config
from runner.errors import ConfigError

SEED_CSV_SOURCE = "seed-leaderboard-csv"
# A reporter identity that names nobody (a user name has no colon).
PSEUDONYM_PREFIX = "pseudonym:"
# The seed kit's rows stopped at 733-757 tokens of a 1500-token budget, so ignore-EOS was off and
# the kit did not hold the quick protocol: its configs get a protocol of their own
# (SEED_CSV_PROTOCOL and its label, named in leaderboard.verdicts.workloads, which tells
# workloads apart).


def _config_label(config: BenchmarkConfig, target: ModelFile, draft: ModelFile | None) -> str:
    parts = [target.name]
    if config.is_speculative:
        parts.append(config.spec_label)
        if draft and draft != target:
            parts.append(f"draft {draft.name}")
        elif draft:
            parts.append("self-draft")
        if config.n_max is not None:
            parts.append(f"n_max {config.n_max}")
    else:
        parts.append("baseline")
    if config.is_synthetic:
        parts.append("synthetic")
    # Every option set away from the engine's default, so that two configs that differ in
    # anything never share a label (verdicts.series).
    parts += option_words(config.canonical())
    label = " · ".join(parts)
    # Two model names of up to 200 characters each make a longer label than its column holds
    # (PostgreSQL refuses it): the label is for reading, the config's fields stay whole.
    # A CharField's max_length is set (the stubs type every field's as optional).
    limit = cast(int, Config._meta.get_field("label").max_length)
    return label if len(label) <= limit else label[: limit - 1] + "…"


def relabel_measured_configs() -> int:
    """Write again the label of every measured config by today's rule (`_config_label`: after
    an upgrade that names more of a config, such as its options); returns how many changed."""
    changed = []
    configs = Config.objects.filter(self_reported=False, target__isnull=False).select_related(
        "target", "draft"
    )
    for row in configs.iterator(chunk_size=2_000):
        try:
            parsed = parse_stored_config(row.canonical)
        except ConfigError:
            continue
        # Filtered to configs with a target.
        label = _config_label(parsed, cast(ModelFile, row.target), row.draft)
        if label != row.label:
            row.label = label
            changed.append(row)
    Config.objects.bulk_update(changed, ["label"], batch_size=2_000)
    return len(changed)


def digest(value: object) -> str:
    """The sha256 of a value's canonical JSON: config keys of self-reported rows and the
    fingerprints that make a repeated import or upload add nothing."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


# Parameters that say how often a protocol measures, not what its figure means.
MEASUREMENT_COUNTS = ("name", "rounds", "warmup", "seed", "runs", "requests")


def protocol_variant(protocol: object) -> str:
    """A short digest of what a protocol's figure means besides its name: for concurrency its
    levels and lengths, for categories its categories, prompts and length (how many rounds or
    warm-ups it ran is left out). Rows of those protocols rank only among configs alike in it."""
    if not isinstance(protocol, dict):
        return ""
    return digest({k: v for k, v in protocol.items() if k not in MEASUREMENT_COUNTS})[:12]


def reporter_identity(*, user: User | None, publish_name: bool) -> str | None:
    """Who a self-reported config's key says reported it: the user name they chose to publish,
    else their pseudonym (made on their first unpublished upload); None for nobody's."""
    if user is None or user.pk is None:
        return None
    if publish_name:
        return user.get_username()
    pseudonym, _ = ReporterPseudonym.objects.get_or_create(
        user=user, defaults={"value": secrets.token_hex(16)}
    )
    return PSEUDONYM_PREFIX + pseudonym.value


def _stored_config(*, key: str, spec_label: str, **fields: object) -> Config:
    """The one writer of Config rows: found by key, or created with one row per speculative type.

    A new key is inserted with ON CONFLICT DO NOTHING and read back: whoever stores the same
    config at the same moment (another user's submission, an import), one row is made and both
    get it. A conflict does not abort the transaction, so the insert needs no savepoint (the one
    get_or_create takes adds two statements to every new config); the speculative types are
    inserted the same way, since the other writer may have inserted them first."""
    try:
        row = Config.objects.get(key=key)
    except Config.DoesNotExist:
        Config.objects.bulk_create(
            [Config(key=key, spec_label=spec_label, **fields)], ignore_conflicts=True
        )
        row = Config.objects.get(key=key)
        if spec_label != "none":
            ConfigSpecType.objects.bulk_create(
                (
                    ConfigSpecType(config=row, name=name)
                    for name in dict.fromkeys(part for part in spec_label.split(",") if part)
                ),
                ignore_conflicts=True,
            )
    # The model files and baseline in hand are the row's own (its key names them): kept on it,
    # so the job's message does not read them again.
    for name in ("target", "draft", "baseline"):
        related = fields.get(name)
        if isinstance(related, Model) and getattr(row, f"{name}_id") == related.pk:
            setattr(row, name, related)
    return row


def config_row(config: BenchmarkConfig, *, target: ModelFile, draft: ModelFile | None) -> Config:
    baseline = (
        config_row(config.baseline(), target=target, draft=None) if config.is_speculative else None
    )
    return _stored_config(
        key=config.key,
        canonical=config.canonical(),
        label=_config_label(config, target, draft),
        target=target,
        draft=draft,
        target_name=target.name,
        spec_label=config.spec_label,
        protocol=config.protocol.name,
        protocol_variant=protocol_variant(config.canonical()["protocol"]),
        n_max=config.n_max,
        ctx_size=config.effective_ctx_size,
        synthetic=config.is_synthetic,
        baseline=baseline,
    )


def imported_config(
    *,
    run_name: str,
    target_name: str,
    baseline: Config | None,
    prompt: str,
    reported_by: str | None,
) -> Config:
    """A self-reported config: identified by its run name, target, baseline and who reported it.

    `reported_by` is the uploader's identity (or, for an anonymous import, the file's): the same
    run name imported by someone else is a config of its own, never a batch of this one. A
    pseudonym is in the key only: the stored canonical JSON, which pages show, says
    "unpublished"."""
    spec_label, n_max = ("none", None) if baseline is None else inferred_spec(run_name)
    identity = {
        "source": SEED_CSV_SOURCE,
        "run_name": run_name,
        "target_name": target_name,
        "baseline_run_name": baseline.label if baseline else None,
        "reported_by": reported_by,
    }
    shown = reported_by
    if reported_by and reported_by.startswith(PSEUDONYM_PREFIX):
        shown = "unpublished"
    return _stored_config(
        key=digest(identity)[:16],
        canonical=identity
        | {
            "reported_by": shown,
            "spec_label_inferred": spec_label,
            "n_max_inferred": n_max,
            "prompt_preview": prompt[:200],
        },
        label=run_name,
        target_name=target_name,
        spec_label=spec_label,
        protocol=SEED_CSV_PROTOCOL,
        n_max=n_max,
        self_reported=True,
        baseline=baseline,
    )


def uploaded_config(
    config: BenchmarkConfig, *, baseline: Config | None, uploaded_by: str | None
) -> Config:
    """A self-reported config row: its own key per uploader, apart from measured results.

    `uploaded_by` is who the key says uploaded it (`reporter_identity`): a published user name,
    a pseudonym, or None; never a name the uploader did not publish."""
    canonical = config.canonical()
    identity = {
        "source": SELF_REPORTED_UPLOAD_SOURCE,
        "config": canonical,
        "uploaded_by": uploaded_by,
    }
    target_name = Path(config.target_model).stem
    parts = [target_name, config.spec_label if config.is_speculative else "baseline"]
    if config.draft_model:
        parts.append(f"draft {Path(config.draft_model).stem}")
    if config.n_max is not None:
        parts.append(f"n_max {config.n_max}")
    parts += option_words(canonical)
    parts.append("self-reported")
    return _stored_config(
        key=digest(identity)[:16],
        canonical=canonical | {"source": SELF_REPORTED_UPLOAD_SOURCE},
        label=" · ".join(parts)[:200],
        target_name=target_name[:200],
        spec_label=config.spec_label,
        protocol=config.protocol.name,
        protocol_variant=protocol_variant(config.canonical()["protocol"]),
        n_max=config.n_max,
        ctx_size=config.effective_ctx_size,
        synthetic=config.is_synthetic,
        self_reported=True,
        baseline=baseline,
    )


def inferred_spec(run_name: str) -> tuple[str, int | None]:
    """The speculative type and n_max that a seed-kit run name suggests (e.g. qwen36-dflash12)."""
    lowered = run_name.lower()
    types = [
        label
        for marker, label in (
            ("dflash", "draft-dflash"),
            ("mtp", "draft-mtp"),
            ("eagle", "draft-eagle3"),
        )
        if marker in lowered
    ]
    if "ngram" in lowered:
        types.append("ngram")
    match = re.search(r"(?:dflash|mtp|eagle3?)[-_]?(\d+)", lowered)
    return (",".join(types) or "none"), int(match.group(1)) if match else None
