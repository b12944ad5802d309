"""ASGI entry point: `gunicorn leaderboard.asgi -c python:leaderboard.gunicorn_conf` (asyncio
workers, so idle and slow clients wait in the event loop instead of holding a worker)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
# Each request's view runs in a thread of its own: a connection kept for reuse would never be
# reused and would stay open (leaderboard/gunicorn_conf.py sets the same before the settings).
os.environ["DATABASE_CONN_MAX_AGE"] = "0"

application = get_asgi_application()

from leaderboard.collector import freeze_when_served  # noqa: E402 (after the apps are loaded)

freeze_when_served()
