"""ASGI entry point: `gunicorn leaderboard.asgi -c python:leaderboard.gunicorn_conf` (asyncio
workers, so idle and slow clients wait in the event loop instead of holding a worker)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

application = get_asgi_application()
