"""WSGI entry point: `gunicorn -c python:leaderboard.web.gunicorn_conf` serves it. A body over
the largest the site accepts is refused before Django reads it (leaderboard/web/body_limit.py)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
django_application = get_wsgi_application()

from django.conf import settings  # noqa: E402 (after the settings are set)

from leaderboard.web.body_limit import WSGIRequestBodyLimit  # noqa: E402

application = WSGIRequestBodyLimit(django_application, limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
