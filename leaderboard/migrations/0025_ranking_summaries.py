"""RankingSummary: what each ranking holds of each target, kept by services.board.rerank; filled
here from the rows and ranks already stored (a pass over the rows in ranking order)."""

import django.db.models.deletion
from django.db import migrations, models


def fill(apps, schema_editor):
    entries = apps.get_model("leaderboard", "LeaderboardEntry")
    summaries = apps.get_model("leaderboard", "RankingSummary")
    fields = (
        "ranking_key",
        "target_name",
        "hardware_id",
        "ranking_label",
        "rank",
        "speedup",
        "config__n_max",
        "config__spec_label",
    )
    found: dict[tuple[str, str], dict] = {}
    batch = []

    def flush():
        for (key, target), held in found.items():
            batch.append(
                summaries(
                    ranking_key=key,
                    target_name=target,
                    hardware_id=held["hardware"],
                    ranking_label=held["label"],
                    rows=held["rows"],
                    drafts=held["drafts"],
                    n_max_values=sorted(held["n_max"]),
                    sweep=len(held["n_max"]),
                    spec_labels=sorted(held["labels"]),
                )
            )
        found.clear()
        if len(batch) >= 5_000:
            summaries.objects.bulk_create(batch)
            batch.clear()

    current = None
    rows = entries.objects.exclude(ranking_key="").order_by("ranking_key").values_list(*fields)
    for key, target, hardware, label, rank, speedup, n_max, spec_label in rows.iterator(
        chunk_size=20_000
    ):
        if key != current:
            flush()
            current = key
        held = found.setdefault(
            (key, target),
            {
                "hardware": hardware,
                "label": label,
                "rows": 0,
                "drafts": 0,
                "n_max": set(),
                "labels": set(),
            },
        )
        held["rows"] += 1
        held["labels"].add(spec_label)
        # A rank is given to the rows that compete, and never to a baseline.
        if rank is not None:
            held["drafts"] += speedup is not None
            if n_max is not None:
                held["n_max"].add(n_max)
    flush()
    summaries.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0024_target_tps_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="RankingSummary",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("ranking_key", models.CharField(max_length=16)),
                ("target_name", models.CharField(max_length=200)),
                ("ranking_label", models.CharField(blank=True, default="", max_length=400)),
                ("rows", models.PositiveIntegerField(default=0)),
                ("drafts", models.PositiveIntegerField(default=0)),
                ("n_max_values", models.JSONField(default=list)),
                ("spec_labels", models.JSONField(default=list)),
                ("sweep", models.PositiveIntegerField(default=0)),
                (
                    "hardware",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="ranking_summaries",
                        to="leaderboard.hardware",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("ranking_key", "target_name"),
                        name="one_summary_per_ranking_target",
                    )
                ],
                "indexes": [
                    models.Index(
                        fields=["target_name", "hardware", "-sweep"], name="summary_target_sweep"
                    ),
                    models.Index(
                        fields=["-sweep", "target_name", "hardware"], name="summary_widest_sweep"
                    ),
                ],
            },
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
