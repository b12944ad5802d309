"""The shared cache's backend (leaderboard.cache_backend): Django's Redis cache, one Redis
client per connection pool instead of one per call, on a real Redis."""

from __future__ import annotations

import os
import threading

import redis
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

from leaderboard.cache_backend import RedisCache

LOCATION = os.environ.get("SPECBOARD_TEST_CACHE_URL", "redis://127.0.0.1:6379/9")


def test_the_cache_keeps_one_client_and_answers_as_djangos_own():
    redis.Redis.from_url(LOCATION).flushdb()
    ours, theirs = RedisCache(LOCATION, {}), DjangoRedisCache(LOCATION, {})
    client = ours._cache.get_client()
    assert ours._cache.get_client(write=True) is client  # one server: one pool, one client
    assert theirs._cache.get_client() is not theirs._cache.get_client()

    ours.set_many({"a": {"rows": [1.5, None]}, "b": "text"}, 60)
    assert theirs.get_many(["a", "b", "c"]) == {"a": {"rows": [1.5, None]}, "b": "text"}
    assert ours.add("mark", 1, 5) and not ours.add("mark", 2, 5)
    theirs.set("counted", 1)
    assert ours.incr("counted") == 2 and ours.get("counted") == 2

    # Threads share the client (its pool hands each its own connection).
    errors = []

    def work(index: int) -> None:
        for round_ in range(50):
            ours.set(f"t{index}", round_)
            if ours.get(f"t{index}") != round_:
                errors.append(index)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and ours._cache.get_client() is client
