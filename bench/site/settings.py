"""Settings for bench/site_load.py: the site's own settings, plus the read-time aggregate page."""

from leaderboard.settings import *  # noqa: F403

ROOT_URLCONF = "bench.site.urls"
