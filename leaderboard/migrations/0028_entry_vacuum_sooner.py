# The board's rows are rewritten in place whenever a run moves its ranking (rerank sets ranks and
# tie labels on the rows it passes), and those columns are indexed, so no update is HOT: each
# leaves a dead row version and an index entry in every index, gathered where the page reads
# (a ranking's head). PostgreSQL's default autovacuum waits for 20% of the table (400,000 dead
# rows at 2M rows); measured here, 61,654 dead rows after a session of recorded runs made the
# board's first page miss 72 -> 60 ms once vacuumed (issue 27). Vacuum this table at 0.5% (and at
# least 1,000 rows) instead: a vacuum of it takes about 2 s at 2M rows (the visibility map skips
# the pages nobody touched). PostgreSQL only; SQLite has no autovacuum to tune.

from django.db import migrations

TABLE = "leaderboard_leaderboardentry"


def vacuum_sooner(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"ALTER TABLE {TABLE} SET (autovacuum_vacuum_scale_factor = 0.005, "
            "autovacuum_vacuum_threshold = 1000, autovacuum_analyze_scale_factor = 0.02)"
        )


def vacuum_as_before(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"ALTER TABLE {TABLE} RESET (autovacuum_vacuum_scale_factor, "
            "autovacuum_vacuum_threshold, autovacuum_analyze_scale_factor)"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0027_ranking_standing_index"),
    ]

    operations = [migrations.RunPython(vacuum_sooner, vacuum_as_before)]
