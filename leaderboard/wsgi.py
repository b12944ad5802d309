"""WSGI entry point: `gunicorn leaderboard.wsgi`."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
application = get_wsgi_application()

from leaderboard.collector import freeze_when_served  # noqa: E402 (after the apps are loaded)

freeze_when_served()
