"""Indexes for the leaderboard's first page, on PostgreSQL.

The page orders by tok/s (or speedup) descending with NULLs last; without a matching index
PostgreSQL sorts every row (74 ms against 4 ms at 200,000 rows, docs/PERFORMANCE.md). SQLite,
the single-machine default, cannot index NULLS LAST and does not need it at that size.
"""

from django.db import migrations

INDEXES = {
    "entry_rank_tps": "tokens_per_second",
    "entry_rank_speedup": "speedup",
}


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    table = apps.get_model("leaderboard", "LeaderboardEntry")._meta.db_table
    for name, column in INDEXES.items():
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{name}" ON "{table}" '
            f'("{column}" DESC NULLS LAST, "id") WHERE NOT "retired"'
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0001_initial")]

    operations = [migrations.RunPython(create, drop)]
