"""A workload is what was measured (issue 44): under the quick protocol the prompts a batch
actually sent, the protocol's text or the runner's distinct token-id prompts (an n-gram config's
plan, which its paired baseline runs too), are part of its ranking (`verdicts.prompt_set`). A
baseline config measured on both has a row for each, so a row's identity names its prompts.
An n-gram row whose requests do not name their prompts is labelled "prompts unknown".

The prompts are derived from each run's records by the verdicts when its row is refreshed, so
existing rows keep an empty `prompt_set` (their old ranking) until `manage.py
refresh_leaderboard` recomputes every row: the migration says so where quick-protocol runs
exist."""

from django.db import migrations, models


def say_refresh(apps, schema_editor):
    Run = apps.get_model("leaderboard", "Run")
    if Run.objects.filter(config__protocol="quick").exists():
        print(
            "\n  quick-protocol runs exist: run `manage.py refresh_leaderboard` to rank them by "
            "the prompts they sent (and to relabel configs by their options)"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0032_entry_anecdotal_evidence"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="leaderboardentry",
            name="one_entry_per_config_hardware_release",
        ),
        migrations.AddField(
            model_name="leaderboardentry",
            name="prompt_set",
            field=models.CharField(blank=True, db_default="", default="", max_length=16),
        ),
        migrations.AddField(
            model_name="leaderboardentry",
            name="prompts_unknown",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="run",
            name="prompt_set",
            field=models.CharField(blank=True, db_default="", default="", max_length=16),
        ),
        migrations.AddConstraint(
            model_name="leaderboardentry",
            constraint=models.UniqueConstraint(
                fields=("config", "hardware", "engine_release", "prompt_set"),
                name="one_entry_per_config_hardware_release_prompts",
            ),
        ),
        migrations.RunPython(say_refresh, migrations.RunPython.noop),
    ]
