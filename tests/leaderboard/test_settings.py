"""The settings helpers reject malformed values and parse DATABASE_URL."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from leaderboard import settings as site_settings
from tests.support.settings_env import settings_values


def test_a_postgres_url_becomes_a_database_entry():
    entry = site_settings.database_from_url(
        "postgres://spec%40board:p%2Fss@db.example:6543/specboard?sslmode=require"
    )
    assert entry["ENGINE"] == "django.db.backends.postgresql"
    assert (entry["NAME"], entry["USER"], entry["PASSWORD"]) == ("specboard", "spec@board", "p/ss")
    assert (entry["HOST"], entry["PORT"], entry["OPTIONS"]) == (
        "db.example",
        "6543",
        {"sslmode": "require"},
    )


def test_a_sqlite_url_and_bad_schemes():
    assert site_settings.database_from_url("sqlite:////tmp/x.sqlite3")["NAME"] == "/tmp/x.sqlite3"
    with pytest.raises(ImproperlyConfigured):
        site_settings.database_from_url("mysql://x@y/z")
    with pytest.raises(ImproperlyConfigured):
        site_settings.database_from_url("postgres://x@y/")


def test_booleans_and_integers_are_strict(monkeypatch):
    monkeypatch.setenv("SOME_FLAG", "maybe")
    monkeypatch.setenv("SOME_NUMBER", "12x")
    with pytest.raises(ImproperlyConfigured):
        site_settings.env_bool("SOME_FLAG")
    with pytest.raises(ImproperlyConfigured):
        site_settings.env_int("SOME_NUMBER", 1)
    with pytest.raises(ImproperlyConfigured, match="SOME_NUMBER must be a number"):
        site_settings.env_float("SOME_NUMBER", 1.0)
    monkeypatch.setenv("SOME_FLAG", "off")
    assert site_settings.env_bool("SOME_FLAG", True) is False
    monkeypatch.setenv("SOME_NUMBER", "0.25")
    assert site_settings.env_float("SOME_NUMBER", 1.0) == 0.25
    assert site_settings.env_int("UNSET_NUMBER", 7) == 7


def test_no_redis_means_no_answer():
    assert site_settings.redis_answers("redis://127.0.0.1:1/0") is False


def settings_seen_by_a_process(**environment: str) -> dict:
    """The security settings a deployment reads from this environment."""
    redirect, hsts, header = settings_values(
        ["SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_PROXY_SSL_HEADER"],
        dropping=("SECURE_", "BEHIND_"),
        **environment,
    )
    return {"redirect": redirect, "hsts": hsts, "proxy_header": header}


def test_behind_a_tls_proxy_the_site_redirects_to_https_and_sends_hsts_by_default():
    assert settings_seen_by_a_process() == {"redirect": False, "hsts": 0, "proxy_header": None}
    behind = settings_seen_by_a_process(BEHIND_TLS_PROXY="1")
    assert behind == {
        "redirect": True,
        "hsts": 31_536_000,
        "proxy_header": ["HTTP_X_FORWARDED_PROTO", "https"],
    }
    assert settings_seen_by_a_process(BEHIND_TLS_PROXY="1", SECURE_HSTS_SECONDS="60")["hsts"] == 60
