# A leaderboard row keeps its config's speculative type and draft length (issue 27), as it keeps
# its target (0021): recording a run reads its ranking's rows (5,000 at 10M runs) without joining
# their configs, which PostgreSQL answered with a scan of every config (64 ms a run).

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def fill_spec_labels(apps, schema_editor):
    Config = apps.get_model("leaderboard", "Config")
    LeaderboardEntry = apps.get_model("leaderboard", "LeaderboardEntry")
    config = Config.objects.filter(pk=OuterRef("config_id"))
    LeaderboardEntry.objects.update(
        spec_label=Subquery(config.values("spec_label")),
        n_max=Subquery(config.values("n_max")),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0025_ranking_summaries"),
    ]

    operations = [
        migrations.AddField(
            model_name="leaderboardentry",
            name="spec_label",
            field=models.CharField(db_default="none", default="none", max_length=200),
        ),
        migrations.AddField(
            model_name="leaderboardentry",
            name="n_max",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(fill_spec_labels, migrations.RunPython.noop),
    ]
