"""Carry DRF's plain authtoken keys over as hashed API tokens, then delete the plain keys.

Before this app, `rest_framework.authtoken` kept one plain key per user in `authtoken_token`.
Each key becomes an ApiToken holding only its sha256 and prefix, so every client that sends
`Authorization: Token <key>` keeps working, and the plain keys are deleted from the old table
(which no installed app uses any more). A database that never had the table has nothing to carry.
"""

import hashlib
from datetime import UTC

from django.db import migrations
from django.utils.dateparse import parse_datetime

OLD_TABLE = "authtoken_token"
PREFIX_LENGTH = 12


def aware(value):
    """A stored `created` as an aware datetime (SQLite may hand back text or a naive value)."""
    if isinstance(value, str):
        value = parse_datetime(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def hash_plain_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("accounts", "ApiToken")
    table = schema_editor.quote_name(OLD_TABLE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id, created FROM {table}")  # noqa: S608 (a constant)
        rows = cursor.fetchall()
    ApiToken.objects.bulk_create(
        ApiToken(
            user_id=user_id,
            name="API token (from before tokens were hashed)",
            prefix=key[:PREFIX_LENGTH],
            key_sha256=hashlib.sha256(key.encode()).hexdigest(),
            created_at=aware(created),
        )
        for key, user_id, created in rows
    )
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")  # noqa: S608 (a constant)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    # Irreversible: the plain keys are gone, which is the point.
    operations = [migrations.RunPython(hash_plain_tokens, migrations.RunPython.noop)]
