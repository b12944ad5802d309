"""ASGI entry point: `gunicorn leaderboard.asgi -c python:leaderboard.gunicorn_conf` (asyncio
workers, so idle and slow clients wait in the event loop instead of holding a worker; each
request, once it has arrived, runs in one hop on a pool of WEB_THREADS threads:
leaderboard/asgi_handler.py). A body over the largest the site accepts is refused before
Django reads it (leaderboard/body_limit.py)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
django.setup(set_prefix=False)

from django.conf import settings  # noqa: E402 (after the settings are set)

from leaderboard.asgi_handler import PooledASGIHandler  # noqa: E402
from leaderboard.body_limit import RequestBodyLimit  # noqa: E402

application = RequestBodyLimit(
    PooledASGIHandler(threads=settings.WEB_THREADS), limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE
)

from leaderboard.collector import freeze_when_served  # noqa: E402 (after the apps are loaded)

freeze_when_served()
