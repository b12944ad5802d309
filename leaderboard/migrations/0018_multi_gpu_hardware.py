# Hardware kinds of several GPUs (issue 28): how many, each one's name and memory; the GPUs a
# host advertises.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0017_host_deliveries_and_releases"),
    ]

    operations = [
        migrations.AddField(
            model_name="hardware",
            name="gpu_count",
            field=models.PositiveSmallIntegerField(db_default=1, default=1),
        ),
        migrations.AddField(
            model_name="hardware",
            name="gpus",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="gpuhost",
            name="gpus",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
