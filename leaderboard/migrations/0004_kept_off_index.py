"""An index for the leaderboard's "kept off the ranking" rows, on PostgreSQL.

Those rows (synthetic, self-reported, degenerate or retired) are few among many ranked ones, so
finding the fastest 50 of them walked the whole tok/s index (50 ms against 5 ms at 200,000 rows,
docs/PERFORMANCE.md). SQLite, the single-machine default, does not need it at that size.
"""

from django.db import migrations

NAME = "entry_kept_off_tps"


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    table = apps.get_model("leaderboard", "LeaderboardEntry")._meta.db_table
    schema_editor.execute(
        f'CREATE INDEX IF NOT EXISTS "{NAME}" ON "{table}" ("tokens_per_second" DESC NULLS LAST, '
        '"id") WHERE "synthetic" OR "self_reported" OR "degenerate" OR "retired"'
    )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f'DROP INDEX IF EXISTS "{NAME}"')


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0003_board_version")]

    operations = [migrations.RunPython(create, drop)]
