"""The API leaderboard's page cache is keyed on the validated query alone: junk cannot fill it."""

from __future__ import annotations

from django.core.cache import cache
from rest_framework.test import APIClient

from leaderboard import board_version


def cached_entries() -> int:
    return len(cache._cache)  # the test settings' per-process cache (LocMemCache)


def test_junk_queries_add_nothing_to_the_cache_and_a_real_query_is_cached_once(db, settings):
    # Read the board's version once for the whole test (a re-read would start new keys).
    settings.SPECBOARD_BOARD_VERSION_SECONDS = 3600
    board_version.forget()
    api = APIClient()
    assert api.get("/api/v1/leaderboard").status_code == 200
    assert api.get("/api/v1/leaderboard", {"ordering": "tau"}).status_code == 200
    # One uncached answer fills the board's shared reads (filter choices, newest release) once.
    assert api.get("/api/v1/leaderboard", {"target": "warm-up"}).status_code == 200
    settled = cached_entries()

    for index in range(200):
        assert api.get("/api/v1/leaderboard", {f"junk{index}": "x"}).status_code == 200
        assert api.get("/api/v1/leaderboard", {"target": f"no-such-{index}"}).status_code == 200
        assert api.get("/api/v1/leaderboard", {"page": f"0{index}x"}).status_code == 404
        assert api.get("/api/v1/leaderboard", {"ordering": f"bad{index}"}).status_code == 400
    assert cached_entries() == settled

    # The same valid query however it is spelled is one entry.
    api.get("/api/v1/leaderboard", {"ordering": "tau", "page": "1"})
    api.get("/api/v1/leaderboard", {"ordering": "tau", "page": "01"})
    assert cached_entries() <= settled + 1
