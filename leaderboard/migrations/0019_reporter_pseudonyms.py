"""Self-reported configs keyed by who reported them only as they chose to be known (issue 23).

A self-reported config's key was a hash over the uploader's user name (uploads) or account id
(seed CSV imports, whose canonical JSON also showed "user:<id>"), published or not: anyone could
hash each user name with a config's public canonical JSON and find whose it was. Now a result
whose uploader did not publish their name is keyed by their pseudonym (ReporterPseudonym, a
random value shown nowhere; services.configs.reporter_identity).

Existing rows, as the services would key them today:
- A config all of whose runs kept the name unpublished is re-keyed in place (its page moves to
  the new key; a CSV config's canonical says "unpublished" and its runs' import fingerprints
  follow the key, so importing the same file again still adds nothing).
- A config that held published and unpublished runs of one uploader (the old key shared them)
  is split: the unpublished runs move to a config of their own, and the two configs' rows on
  that hardware (and those of configs paired with them) are dropped for
  `manage.py refresh_leaderboard` to rebuild from the runs; the migration says so when it split
  any.
- Anonymous imports and configs whose runs are all published keep their keys. An upload whose
  uploader's account is gone gets a random key.
"""

import hashlib
import json
import secrets

from django.conf import settings
from django.db import migrations, models
from django.db.models import F

UPLOAD = "self-reported-upload"
SEED_CSV = "seed-leaderboard-csv"
PSEUDONYM = "pseudonym:"
CONFIG_FIELDS = (
    "label", "target_id", "draft_id", "target_name", "spec_label", "protocol",
    "protocol_variant", "n_max", "ctx_size", "synthetic", "self_reported", "created_at",
)  # fmt: skip


def digest(value) -> str:
    """services.configs.digest as it stands: the sha256 of the value's sorted JSON."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def upload_identity(canonical: dict, uploaded_by: str | None) -> dict:
    config = {name: value for name, value in canonical.items() if name != "source"}
    return {"source": UPLOAD, "config": config, "uploaded_by": uploaded_by}


def csv_identity(canonical: dict, reported_by: str) -> dict:
    names = ("source", "run_name", "target_name", "baseline_run_name")
    return {name: canonical.get(name) for name in names} | {"reported_by": reported_by}


def upload_name(config, names: list[str]) -> str | None:
    """The user name an upload's key was made over, or None (anonymous, or no such user)."""
    identity = upload_identity(config.canonical, None)
    if digest(identity)[:16] == config.key:
        return None
    # The sorted JSON ends with the name: everything before it is the same for every candidate.
    text = json.dumps(identity, sort_keys=True, default=str)
    assert text.endswith("null}")
    start = hashlib.sha256(text[: -len("null}")].encode())
    for name in names:
        candidate = start.copy()
        candidate.update((json.dumps(name) + "}").encode())
        if candidate.hexdigest()[:16] == config.key:
            return name
    return None


def rekey(apps, schema_editor):
    Config = apps.get_model("leaderboard", "Config")
    ConfigSpecType = apps.get_model("leaderboard", "ConfigSpecType")
    Run = apps.get_model("leaderboard", "Run")
    LeaderboardEntry = apps.get_model("leaderboard", "LeaderboardEntry")
    BoardVersion = apps.get_model("leaderboard", "BoardVersion")
    Pseudonym = apps.get_model("leaderboard", "ReporterPseudonym")
    User = apps.get_model(settings.AUTH_USER_MODEL)
    users = dict(User.objects.values_list("username", "pk"))
    names = list(users)

    def pseudonym(user_id: int | None) -> str:
        if user_id is None or not User.objects.filter(pk=user_id).exists():
            return PSEUDONYM + secrets.token_hex(16)  # nobody's: the account is gone
        row, _ = Pseudonym.objects.get_or_create(
            user_id=user_id, defaults={"value": secrets.token_hex(16)}
        )
        return PSEUDONYM + row.value

    def uploader(config) -> tuple[bool, int | None]:
        """Whether the key names an account, and which (None: one that is gone)."""
        source = config.canonical.get("source")
        if source == UPLOAD:
            name = upload_name(config, names)
            if name is not None:
                return True, users[name]
            # Not anonymous, yet no user's name: the account was deleted or renamed.
            return digest(upload_identity(config.canonical, None))[:16] != config.key, None
        reported_by = str(config.canonical.get("reported_by") or "")
        if source == SEED_CSV and reported_by.startswith("user:"):
            pk = reported_by.removeprefix("user:")
            return True, int(pk) if pk.isdigit() else None
        return False, None

    def new_identity(config, reporter: str) -> tuple[str, dict]:
        if config.canonical.get("source") == UPLOAD:
            return digest(upload_identity(config.canonical, reporter))[:16], config.canonical
        key = digest(csv_identity(config.canonical, reporter))[:16]
        return key, config.canonical | {"reported_by": "unpublished"}

    def refingerprint(runs, key: str, source: str) -> None:
        # A CSV row's fingerprint is over its config's key (services.community_imports).
        for run in runs:
            if run.import_fingerprint and source == SEED_CSV:
                run.import_fingerprint = digest([run.hardware.slug, key, run.raw_result])
                run.save(update_fields=["import_fingerprint"])

    twins: dict[int, int] = {}  # a split config's id -> its unpublished twin's id
    stale: set[tuple[int, int, str]] = set()  # (config, hardware, release) rows to rebuild
    changed = 0
    # Baselines first, so a speculative config finds its baseline's twin.
    configs = Config.objects.filter(self_reported=True).order_by(
        F("baseline_id").asc(nulls_first=True), "pk"
    )
    for config in configs:
        named, user_id = uploader(config)
        if not named:
            continue
        runs = list(Run.objects.filter(config=config).select_related("hardware"))
        hidden = [run for run in runs if not (run.provenance or {}).get("uploaded_by")]
        if not hidden:
            continue
        key, canonical = new_identity(config, pseudonym(user_id))
        changed += 1
        baseline_id = twins.get(config.baseline_id, config.baseline_id)
        if len(hidden) == len(runs) and not Config.objects.filter(key=key).exists():
            Config.objects.filter(pk=config.pk).update(
                key=key, canonical=canonical, baseline_id=baseline_id
            )
            refingerprint(hidden, key, config.canonical.get("source"))
            if baseline_id != config.baseline_id:
                stale.update((config.pk, r.hardware_id, r.engine_release) for r in runs)
            continue
        twin, _ = Config.objects.get_or_create(
            key=key,
            defaults={name: getattr(config, name) for name in CONFIG_FIELDS}
            | {"canonical": canonical, "baseline_id": baseline_id},
        )
        ConfigSpecType.objects.bulk_create(
            [ConfigSpecType(config=twin, name=t.name) for t in config.spec_types.all()],
            ignore_conflicts=True,
        )
        Run.objects.filter(pk__in=[run.pk for run in hidden]).update(config=twin)
        refingerprint(hidden, key, config.canonical.get("source"))
        twins[config.pk] = twin.pk
        stale.update((config.pk, r.hardware_id, r.engine_release) for r in runs)
    # Rows paired with a rebuilt baseline row are rebuilt too.
    paired = Config.objects.filter(baseline_id__in=[c for c, _, _ in stale]).values_list("pk")
    for (config_id,) in paired:
        stale.update(
            (config_id, hardware_id, release)
            for hardware_id, release in LeaderboardEntry.objects.filter(
                config_id=config_id
            ).values_list("hardware_id", "engine_release")
        )
    for config_id, hardware_id, release in stale:
        LeaderboardEntry.objects.filter(
            config_id=config_id, hardware_id=hardware_id, engine_release=release
        ).delete()
    if changed:
        BoardVersion.objects.filter(pk=1).update(value=F("value") + 1, row_set=F("row_set") + 1)
    if stale:
        print(
            f"\n  0019: {len(twins)} self-reported config(s) held published and unpublished "
            "runs of one uploader and were split; run `python manage.py refresh_leaderboard` "
            f"to rebuild their {len(stale)} leaderboard row(s)."
        )


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("leaderboard", "0018_multi_gpu_hardware"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReporterPseudonym",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("value", models.CharField(max_length=32, unique=True)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=models.deletion.CASCADE,
                        related_name="reporter_pseudonym",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        # Keys made before stay as they were when the migration is reversed (nothing names the
        # uploader in them any more).
        migrations.RunPython(rekey, migrations.RunPython.noop),
    ]
