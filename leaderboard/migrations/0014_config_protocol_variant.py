"""Config.protocol_variant: what a protocol's figure means besides its name, so the concurrency
and categories protocols rank only among configs alike in their levels, lengths or categories.
Filled for the stored configs from their canonical JSON, as services.configs computes it."""

import hashlib
import json

from django.db import migrations, models

MEASUREMENT_COUNTS = ("name", "rounds", "warmup", "seed", "runs", "requests")


def fill(apps, schema_editor):
    Config = apps.get_model("leaderboard", "Config")
    changed = []
    for config in Config.objects.filter(self_reported=False).only("pk", "canonical").iterator():
        canonical = config.canonical if isinstance(config.canonical, dict) else {}
        protocol = canonical.get("protocol")
        if not isinstance(protocol, dict):
            continue
        meaning = {k: v for k, v in protocol.items() if k not in MEASUREMENT_COUNTS}
        text = json.dumps(meaning, sort_keys=True, default=str)
        config.protocol_variant = hashlib.sha256(text.encode()).hexdigest()[:12]
        changed.append(config)
    Config.objects.bulk_update(changed, ["protocol_variant"], batch_size=500)


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0013_hub_models"),
    ]

    operations = [
        migrations.AddField(
            model_name="config",
            name="protocol_variant",
            field=models.CharField(
                blank=True, db_default="", db_index=True, default="", max_length=16
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
