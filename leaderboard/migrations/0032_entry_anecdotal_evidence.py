# A leaderboard row keeps what its speculative figures rest on (its best batch's drafted tokens
# and verify steps) and whether that is too little to crown it (`verdicts.evidence`, issue 44).
# Rows stored before are filled here from their best batch; `manage.py refresh_leaderboard`
# recomputes the rest of an upgraded board's verdicts (the random-effects config estimate, the
# interval of the speedup shown, the best batch by the row's noise rules).

from django.db import migrations, models
from django.db.models import OuterRef, Q, Subquery

# verdicts.evidence's thresholds when this migration was written (a migration keeps its rule).
MIN_VERIFY_STEPS = 20
MIN_DRAFTED_TOKENS = 20


def fill_evidence(apps, schema_editor):
    Run = apps.get_model("leaderboard", "Run")
    LeaderboardEntry = apps.get_model("leaderboard", "LeaderboardEntry")
    best = Run.objects.filter(pk=OuterRef("best_run_id"))
    LeaderboardEntry.objects.filter(best_run__isnull=False).update(
        draft_tokens=Subquery(best.values("draft_tokens")),
        verify_steps=Subquery(best.values("verify_steps")),
    )
    counted = Q(verify_steps__gt=0) | Q(best_run__tau__isnull=False)
    LeaderboardEntry.objects.exclude(spec_label="none").filter(
        Q(draft_tokens__lt=MIN_DRAFTED_TOKENS) | (counted & Q(verify_steps__lt=MIN_VERIFY_STEPS))
    ).update(anecdotal=True)


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0031_hardware_cpu_model"),
    ]

    operations = [
        migrations.AddField(
            model_name="leaderboardentry",
            name="anecdotal",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="leaderboardentry",
            name="draft_tokens",
            field=models.BigIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="leaderboardentry",
            name="verify_steps",
            field=models.BigIntegerField(db_default=0, default=0),
        ),
        migrations.RunPython(fill_evidence, migrations.RunPython.noop),
    ]
