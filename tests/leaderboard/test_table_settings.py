"""What the migrations tell PostgreSQL about the tables: the board's rows, rewritten whenever a
run moves their ranking, are vacuumed at 0.5% dead rows rather than the default 20%
(migration 0028)."""

from __future__ import annotations

import pytest
from django.db import connection


def test_the_board_rows_are_vacuumed_sooner_than_postgresqls_default(db):
    if connection.vendor != "postgresql":
        pytest.skip("autovacuum is PostgreSQL's (CI runs on it)")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reloptions FROM pg_class WHERE relname = 'leaderboard_leaderboardentry'"
        )
        (options,) = cursor.fetchone()
    assert "autovacuum_vacuum_scale_factor=0.005" in options
    assert "autovacuum_vacuum_threshold=1000" in options
