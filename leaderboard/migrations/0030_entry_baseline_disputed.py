"""A row whose own baseline disagrees with the site's measurements of it (issue 42,
`verdicts.baselines`) is kept off every ranking: the flag joins the others in the ranking's
index-only scan (0027) and in the kept-off rows' partial index (0023, PostgreSQL only)."""

from django.db import migrations, models

NAME = "entry_kept_off_board_order"
BEFORE = '"synthetic" OR "self_reported" OR "degenerate" OR "retired" OR "test_weights"'
AFTER = f'{BEFORE} OR "baseline_disputed"'


def _kept_off_index(condition: str):
    def create(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        table = apps.get_model("leaderboard", "LeaderboardEntry")._meta.db_table
        schema_editor.execute(f'DROP INDEX IF EXISTS "{NAME}"')
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{NAME}" ON "{table}" '
            f'("ranking_label", "ranking_key", "tokens_per_second" DESC, "id") WHERE {condition}'
        )

    return create


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0029_entry_ranking_baselines"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="leaderboardentry",
            name="entry_ranking_standing",
        ),
        migrations.AddField(
            model_name="leaderboardentry",
            name="baseline_disputed",
            field=models.BooleanField(db_default=False, default=False),
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
                    "baseline_disputed",
                ),
                name="entry_ranking_standing",
            ),
        ),
        migrations.RunPython(_kept_off_index(AFTER), _kept_off_index(BEFORE)),
    ]
