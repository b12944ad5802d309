"""A CPU hardware kind knows its CPU model (issue 42, the door's `provenance.system_mismatch`)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0030_entry_baseline_disputed"),
    ]

    operations = [
        migrations.AddField(
            model_name="hardware",
            name="cpu_model",
            field=models.CharField(blank=True, max_length=200),
        ),
    ]
