"""API tokens are stored as the sha256 of their key: the key never reaches the database, a
revoked or unknown key is a 401 that says which, `Token` and `Bearer` both work, last use is
recorded, DRF's old plain keys carry over by migration, and the command prints a new key once."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.accounts.models import ApiToken, key_digest
from leaderboard.accounts.services import (
    MAX_ACTIVE_TOKENS,
    TokenError,
    issue_api_token,
    revoke_api_token,
)


def every_stored_value() -> str:
    """Every value of every row of every table, as one string."""
    values = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608
            values.extend(str(row) for row in cursor.fetchall())
    return "\n".join(values)


def api_with(header: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    return client


def test_only_the_keys_sha256_and_prefix_are_stored(user):
    issued = issue_api_token(user=user, name="laptop")

    stored = ApiToken.objects.get()
    assert stored.key_sha256 == key_digest(issued.key) != issued.key
    assert issued.key.startswith(stored.prefix) and len(stored.prefix) == 12
    assert len(issued.key) > 40
    assert issued.key not in every_stored_value()
    assert issued.key[12:] not in every_stored_value()


def test_token_and_bearer_headers_both_authenticate_and_record_the_last_use(user):
    issued = issue_api_token(user=user, name="laptop")
    assert ApiToken.objects.get().last_used_at is None

    for scheme in ("Token", "Bearer", "token"):
        response = api_with(f"{scheme} {issued.key}").get("/api/v1/allowance")
        assert response.status_code == 200, (scheme, response.json())
    first_use = ApiToken.objects.get().last_used_at
    assert first_use is not None

    # Uses within a minute are not rewritten on every request; later ones are.
    api_with(f"Token {issued.key}").get("/api/v1/allowance")
    assert ApiToken.objects.get().last_used_at == first_use
    ApiToken.objects.update(last_used_at=first_use - timedelta(minutes=5))
    api_with(f"Token {issued.key}").get("/api/v1/allowance")
    assert ApiToken.objects.get().last_used_at > first_use


def test_a_revoked_token_is_a_401_that_says_so_and_other_tokens_still_work(user):
    kept = issue_api_token(user=user, name="ci")
    gone = issue_api_token(user=user, name="old laptop")
    assert revoke_api_token(token_id=gone.token.id, user=user)
    assert not revoke_api_token(token_id=gone.token.id, user=user)

    response = api_with(f"Token {gone.key}").get("/api/v1/allowance")
    assert response.status_code == 401
    assert response.json() == {"detail": "This token has been revoked."}
    assert api_with(f"Token {kept.key}").get("/api/v1/allowance").status_code == 200


@pytest.mark.parametrize(
    ("header", "detail"),
    [
        ("Token sbk_not-a-key-anyone-was-given", "Invalid token."),
        ("Token", "Invalid token header: give one key, as in 'Authorization: Token <key>'."),
        (
            "Bearer one two",
            "Invalid token header: give one key, as in 'Authorization: Token <key>'.",
        ),
    ],
)
def test_an_unknown_or_malformed_token_is_a_401_with_one_line(db, header, detail):
    response = api_with(header).post("/api/v1/submissions", {}, format="json")
    assert response.status_code == 401
    assert response.json() == {"detail": detail}
    assert response.headers["WWW-Authenticate"] == "Token"


def test_a_write_without_a_token_is_a_401(db):
    response = APIClient().post("/api/v1/submissions", {}, format="json")
    assert response.status_code == 401


def test_an_inactive_users_token_is_refused(user):
    issued = issue_api_token(user=user, name="laptop")
    user.is_active = False
    user.save()
    response = api_with(f"Token {issued.key}").get("/api/v1/allowance")
    assert response.status_code == 401 and "inactive" in response.json()["detail"]


def test_a_token_needs_a_name_and_a_user_has_at_most_twenty_live_ones(user):
    with pytest.raises(TokenError, match="name"):
        issue_api_token(user=user, name="   ")
    for index in range(MAX_ACTIVE_TOKENS):
        issue_api_token(user=user, name=f"token {index}")
    with pytest.raises(TokenError, match="revoke one first"):
        issue_api_token(user=user, name="one more")
    revoke_api_token(token_id=ApiToken.objects.first().id, user=user)
    assert issue_api_token(user=user, name="one more").token.name == "one more"


def test_the_migration_carries_drf_plain_keys_over_hashed_and_deletes_them(transactional_db, user):
    """Back to before the migration, DRF's table with a plain key in it, then migrate."""
    old_key = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"
    call_command("migrate", "accounts", "0001", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
            "created timestamp with time zone NOT NULL, user_id integer NOT NULL)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token (key, created, user_id) VALUES (%s, %s, %s)",
            [old_key, "2025-03-04 05:06:07+00:00", user.id],
        )
    try:
        call_command("migrate", "accounts", verbosity=0)

        carried = ApiToken.objects.get()
        assert (carried.user, carried.prefix) == (user, old_key[:12])
        assert carried.created_at.isoformat() == "2025-03-04T05:06:07+00:00"
        assert old_key not in every_stored_value()
        assert api_with(f"Token {old_key}").get("/api/v1/allowance").status_code == 200
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE authtoken_token")


def test_the_migration_has_nothing_to_do_without_drfs_table(transactional_db):
    assert "authtoken_token" not in connection.introspection.table_names()
    call_command("migrate", "accounts", "0001", verbosity=0)
    call_command("migrate", "accounts", verbosity=0)
    assert ApiToken.objects.count() == 0


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def test_the_command_prints_a_new_working_key_each_time_and_stores_none(db):
    with pytest.raises(CommandError, match="no such user"):
        run("create_api_token", "nobody")
    first = run("create_api_token", "ci-bot", "--create")
    second = run("create_api_token", "ci-bot", "--name", "nightly")

    assert first != second
    assert list(ApiToken.objects.order_by("id").values_list("name", flat=True)) == [
        "command line",
        "nightly",
    ]
    stored = every_stored_value()
    assert first not in stored and second not in stored
    for key in (first, second):
        response = api_with(f"Token {key}").get("/api/v1/allowance")
        assert response.status_code == 200


def test_revoking_in_the_admin_revokes(admin_client, user):
    issued = issue_api_token(user=user, name="laptop")
    response = admin_client.post(
        "/admin/accounts/apitoken/",
        {"action": "revoke", "_selected_action": [issued.token.id]},
    )
    assert response.status_code == 302
    assert ApiToken.objects.get().revoked_at is not None
    assert ApiToken.objects.get().revoked_at <= timezone.now()
    assert api_with(f"Token {issued.key}").get("/api/v1/allowance").status_code == 401


def test_invalid_tokens_are_401_as_json(db):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Token ' OR 1=1 --")
    response = api.get("/api/v1/leaderboard")
    assert response.status_code == 401 and "detail" in response.json()


@pytest.mark.parametrize(
    "header",
    ["Token \x00", "Token " + "x" * 10_000, "Bearer", "Bearer a b", "Token é", "token sbk_\x00"],
)
def test_malformed_token_headers_are_401s(db, header):
    response = APIClient().get("/api/v1/model-requests", HTTP_AUTHORIZATION=header)

    assert response.status_code == 401
    assert "detail" in response.json()
