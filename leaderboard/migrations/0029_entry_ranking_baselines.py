# A ranking's baselines, fastest first, in an index of their own (issue 27): every board page
# shows its rankings' denominators, and finding the first baseline down the board's order read
# 2,000 of a ranking's rows (30 ms at 1M runs).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0028_entry_vacuum_sooner"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="leaderboardentry",
            index=models.Index(
                condition=models.Q(("spec_label", "none")),
                fields=["ranking_label", "ranking_key", "-tokens_per_second", "id"],
                name="entry_ranking_baselines",
            ),
        ),
    ]
