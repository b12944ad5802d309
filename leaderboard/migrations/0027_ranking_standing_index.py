# A ranking's rows with all that deciding its ranks reads (issue 27): recording a run reads its
# ranking's 5,000 rows from this index alone (1 ms at 10M runs) instead of one table page a row
# (20 ms). It replaces entry_ranking_rank, whose columns lead it.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0026_entry_spec_label_n_max"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="leaderboardentry",
            name="entry_ranking_rank",
        ),
        migrations.AddIndex(
            model_name="leaderboardentry",
            index=models.Index(
                fields=["ranking_key", "rank"],
                include=(
                    "id",
                    "tokens_per_second",
                    "config_mean",
                    "config_stdev",
                    "config_n",
                    "like_leader",
                    "like_above",
                    "spec_label",
                    "synthetic",
                    "self_reported",
                    "degenerate",
                    "retired",
                    "test_weights",
                ),
                name="entry_ranking_standing",
            ),
        ),
    ]
