"""A row whose speedup divides by a noisy baseline batch says so (`baseline_noisy`, issue 44), and
each ranking's summary keeps the speedup its draft answer leads with (`lead_speedup`), so the
front page can name every workload where a draft measured faster than no drafting.

Existing summaries get their lead from the stored rows (the highest speedup of the ranked drafts
that are not noisy, else of all); whether a baseline batch is noisy is known only once a row is
refreshed (`manage.py refresh_leaderboard`)."""

from django.db import migrations, models
from django.db.models import Max


def fill_lead_speedups(apps, schema_editor):
    Entry = apps.get_model("leaderboard", "LeaderboardEntry")
    Summary = apps.get_model("leaderboard", "RankingSummary")
    best: dict[tuple[str, str], tuple[bool, float]] = {}
    drafts = (
        Entry.objects.filter(rank__isnull=False, speedup__isnull=False)
        .exclude(spec_label="none")
        .values("ranking_key", "target_name", "noisy")
        .annotate(top=Max("speedup"))
    )
    for row in drafts:
        pair = (row["ranking_key"], row["target_name"])
        candidate = (not row["noisy"], row["top"])
        best[pair] = max(best.get(pair, candidate), candidate)
    changed = []
    for summary in Summary.objects.all():
        found = best.get((summary.ranking_key, summary.target_name))
        if found is not None:
            summary.lead_speedup = found[1]
            changed.append(summary)
    Summary.objects.bulk_update(changed, ["lead_speedup"], batch_size=5_000)


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0033_prompt_set_workloads"),
    ]

    operations = [
        migrations.AddField(
            model_name="leaderboardentry",
            name="baseline_noisy",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="rankingsummary",
            name="lead_speedup",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.RunPython(fill_lead_speedups, migrations.RunPython.noop),
    ]
