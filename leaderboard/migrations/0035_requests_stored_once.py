"""Each request is stored once: as its run's request record (issue 45).

Until now a run's requests were stored twice, as `RequestRecord` rows (the columns the pages
query) and whole in `Run.raw_result["requests"]`. The record keeps what its columns lack in a new
`details` field, and the copy in the stored result goes. Runs without stored requests (the seed
CSV's, the bench's) are left as they are, so the migration reads only the runs that have them.

On PostgreSQL both steps are one UPDATE each; elsewhere (SQLite) each run is moved in Python.
Reversing puts each run's records back into its stored result, columns and details together,
for the runs whose records came from a runner's result (a runner's record always has details:
its output length asked for, its distinct 4-gram ratio, whether it stopped early); the seed
CSV's records, made from its samples, were never in its stored row.
"""

from django.db import migrations, models

# The record's columns, as `leaderboard.models.REQUEST_RECORD_FIELDS` lists them at this point.
COLUMNS = (
    "index", "phase", "point", "input_tokens", "prompt_n", "prompt_ms", "predicted_n",
    "predicted_ms", "decode_tokens_per_second", "end_to_end_tokens_per_second", "ttft_ms",
    "wall_ms", "draft_n", "draft_n_accepted", "verify_steps", "tau", "accepted_per_position",
    "output_sha256", "first_divergence",
)  # fmt: skip

MOVE_DETAILS = """
UPDATE leaderboard_requestrecord AS record
SET details = stored.value - %s::text[]
FROM leaderboard_run AS run,
    jsonb_array_elements(
        CASE jsonb_typeof(run.raw_result -> 'requests')
        WHEN 'array' THEN run.raw_result -> 'requests' ELSE '[]' END
    ) AS stored(value)
WHERE record.run_id = run.id
    AND jsonb_typeof(run.raw_result) = 'object' AND run.raw_result ? 'requests'
    AND jsonb_typeof(stored.value) = 'object'
    AND stored.value ->> 'index' = record.index::text
"""
DROP_COPIES = """
UPDATE leaderboard_run SET raw_result = raw_result - 'requests'
WHERE jsonb_typeof(raw_result) = 'object' AND raw_result ? 'requests'
"""
PUT_BACK = """
UPDATE leaderboard_run AS run
SET raw_result = run.raw_result || jsonb_build_object('requests', records.requests)
FROM (
    SELECT run_id, jsonb_agg(
        (to_jsonb(record) - 'id' - 'run_id' - 'details') || record.details ORDER BY record.index
    ) AS requests
    FROM leaderboard_requestrecord AS record
    GROUP BY run_id
    HAVING bool_or(record.details <> '{}'::jsonb)
) AS records
WHERE records.run_id = run.id AND jsonb_typeof(run.raw_result) = 'object'
"""


def store_requests_once(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(MOVE_DETAILS, [list(COLUMNS)])
            cursor.execute(DROP_COPIES)
        return
    Run = apps.get_model("leaderboard", "Run")
    RequestRecord = apps.get_model("leaderboard", "RequestRecord")
    for run in Run.objects.filter(raw_result__has_key="requests").iterator(chunk_size=100):
        if not isinstance(run.raw_result, dict):
            continue
        stored = run.raw_result.pop("requests")
        details = {
            record["index"]: {k: v for k, v in record.items() if k not in COLUMNS}
            for record in (stored if isinstance(stored, list) else [])
            if isinstance(record, dict) and isinstance(record.get("index"), int)
        }
        records = list(RequestRecord.objects.filter(run_id=run.pk, index__in=details))
        for record in records:
            record.details = details[record.index]
        RequestRecord.objects.bulk_update(records, ["details"], batch_size=500)
        Run.objects.filter(pk=run.pk).update(raw_result=run.raw_result)


def put_requests_back(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(PUT_BACK)
        return
    Run = apps.get_model("leaderboard", "Run")
    RequestRecord = apps.get_model("leaderboard", "RequestRecord")
    with_records = RequestRecord.objects.exclude(details={}).values_list("run_id", flat=True)
    for run in Run.objects.filter(pk__in=with_records).iterator(chunk_size=100):
        if not isinstance(run.raw_result, dict):
            continue
        records = RequestRecord.objects.filter(run_id=run.pk).order_by("index")
        run.raw_result = dict(run.raw_result) | {
            "requests": [
                {column: getattr(record, column) for column in COLUMNS} | record.details
                for record in records
            ]
        }
        Run.objects.filter(pk=run.pk).update(raw_result=run.raw_result)


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0034_baseline_noisy_lead_speedup")]

    operations = [
        migrations.AddField(
            model_name="requestrecord",
            name="details",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(store_requests_once, put_requests_back, elidable=True),
    ]
