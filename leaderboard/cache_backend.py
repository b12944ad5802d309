"""The shared cache on Redis: Django's backend, with one Redis client per connection pool.

Django's `RedisCacheClient` builds a new `redis.Redis` object for every cache call (about 90 µs
of this machine's CPU each); a board page that misses makes twenty such calls. The client
object holds no connection of its own (its pool does, and redis-py's pool is safe across
threads and resets itself in a forked process), so one per pool serves every call.
"""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class _OneClientPerPool(RedisCacheClient):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, object] = {}

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._client(connection_pool=self._get_connection_pool(write))
            self._clients[index] = client
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = _OneClientPerPool
