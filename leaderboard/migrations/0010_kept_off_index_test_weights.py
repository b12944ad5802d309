"""The kept-off rows' index (0004) also covers rows on test weights, which leave the ranking too."""

from django.db import migrations

NAME = "entry_kept_off_tps"
FLAGS = '"synthetic" OR "self_reported" OR "degenerate" OR "retired"'


def _rebuild(apps, schema_editor, flags: str) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    table = apps.get_model("leaderboard", "LeaderboardEntry")._meta.db_table
    schema_editor.execute(f'DROP INDEX IF EXISTS "{NAME}"')
    schema_editor.execute(
        f'CREATE INDEX "{NAME}" ON "{table}" ("tokens_per_second" DESC NULLS LAST, "id") '
        f"WHERE {flags}"
    )


def with_test_weights(apps, schema_editor):
    _rebuild(apps, schema_editor, f'{FLAGS} OR "test_weights"')


def without_test_weights(apps, schema_editor):
    _rebuild(apps, schema_editor, FLAGS)


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0009_seed_csv_protocol")]

    operations = [migrations.RunPython(with_test_weights, without_test_weights)]
