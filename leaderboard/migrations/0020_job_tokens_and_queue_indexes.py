# What a job costs in tokens, kept on the job when it is submitted, so that a user's tokens today
# are one sum (issue 27: the allowance parsed every config of the user's day again on each
# submission); the allowance's and the queue position's indexes. Existing jobs get their budget
# from their stored config, by the runner's rule, as the allowance counted them until now.

from django.conf import settings
from django.db import migrations, models


def fill_total_tokens(apps, schema_editor):
    from runner.config import parse_stored_config
    from runner.errors import ConfigError
    from runner.protocols import job_token_budget

    Job = apps.get_model("leaderboard", "Job")
    budgets: dict[int, int] = {}
    jobs = Job.objects.values_list("pk", "config_id", "config__canonical").iterator(chunk_size=2000)
    for pk, config_id, canonical in jobs:
        if config_id not in budgets:
            try:
                budgets[config_id] = job_token_budget(parse_stored_config(canonical))[
                    "total_tokens"
                ]
            except ConfigError:
                budgets[config_id] = 0
        if budgets[config_id]:
            Job.objects.filter(pk=pk).update(total_tokens=budgets[config_id])


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0019_reporter_pseudonyms"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="total_tokens",
            field=models.BigIntegerField(db_default=0, default=0),
        ),
        migrations.RunPython(fill_total_tokens, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                fields=["owner", "created_at"],
                include=("auto_scheduled", "total_tokens"),
                name="job_owner_recent",
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("status", "queued")),
                fields=["hardware", "created_at", "id"],
                name="job_queued_order",
            ),
        ),
    ]
