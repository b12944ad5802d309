"""Configs imported from a seed kit CSV say so: protocol "seed-csv" (shown as "seed kit CSV
(unverified)"), not "quick", since those rows did not run the quick protocol (ignore-EOS was off)."""

from django.db import migrations


def label_seed_csv_configs(apps, schema_editor):
    Config = apps.get_model("leaderboard", "Config")
    Config.objects.filter(
        self_reported=True, canonical__source="seed-leaderboard-csv", protocol="quick"
    ).update(protocol="seed-csv")


def back_to_quick(apps, schema_editor):
    Config = apps.get_model("leaderboard", "Config")
    Config.objects.filter(protocol="seed-csv").update(protocol="quick")


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0008_gpu_hosts"),
    ]

    operations = [migrations.RunPython(label_seed_csv_configs, back_to_quick)]
