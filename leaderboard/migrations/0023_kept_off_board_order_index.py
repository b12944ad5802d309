"""The kept-off rows in the board's order (issue 27): the front page lists the first fifty rows kept
off the ranking, and those of test weights, ranking after ranking; with an index in that order
over those rows alone it reads fifty index entries instead of walking the whole board's order
past the ranked rows (9 ms a section at 2,000,000 rows). PostgreSQL only, as 0010: SQLite reads
the board's index and does not need it at its sizes."""

from django.db import migrations

NAME = "entry_kept_off_board_order"
KEPT_OFF = '"synthetic" OR "self_reported" OR "degenerate" OR "retired" OR "test_weights"'


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    table = apps.get_model("leaderboard", "LeaderboardEntry")._meta.db_table
    schema_editor.execute(
        f'CREATE INDEX IF NOT EXISTS "{NAME}" ON "{table}" '
        f'("ranking_label", "ranking_key", "tokens_per_second" DESC, "id") WHERE {KEPT_OFF}'
    )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f'DROP INDEX IF EXISTS "{NAME}"')


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0022_ranking_versions")]

    operations = [migrations.RunPython(create, drop)]
