"""manage.py create_api_token: a new key printed each time, only its hash stored."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from leaderboard.accounts.models import ApiToken, key_digest


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_api_token_prints_a_new_key_each_time_and_stores_only_its_hash(db):
    with pytest.raises(CommandError):
        run("create_api_token", "nobody")
    first = run("create_api_token", "ci-bot", "--create").strip()
    second = run("create_api_token", "ci-bot").strip()
    assert first != second
    stored = set(ApiToken.objects.values_list("key_sha256", flat=True))
    assert stored == {key_digest(first), key_digest(second)}
