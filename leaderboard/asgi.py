"""ASGI entry point, Django's own handler, for an ASGI server (the site is served by gunicorn's
threaded workers on leaderboard.wsgi: leaderboard/web/gunicorn_conf.py). A body over the largest
the site accepts is refused before Django reads it (leaderboard/web/body_limit.py)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
django_application = get_asgi_application()

from django.conf import settings  # noqa: E402 (after the settings are set)

from leaderboard.web.body_limit import RequestBodyLimit  # noqa: E402

# Django's stubs type its handler's scope as a dict and its messages as read-only Mappings, the
# ASGI spec's (body_limit) are mutable: the same callable, two spellings of its types.
application = RequestBodyLimit(
    django_application,  # type: ignore[arg-type]
    limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
)
