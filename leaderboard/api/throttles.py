"""Per-user rate limits on the writes that cost a GPU or a file (submissions, imports, uploads),
and per-address ones on the downloads of visitors not signed in (a run's exports and API detail,
the board's exports, on the pages and the API alike: `leaderboard.exports.throttled`).

Each rate is read from settings at request time (SPECBOARD_SUBMISSION_RATE,
SPECBOARD_IMPORT_RATE and SPECBOARD_ANONYMOUS_EXPORT_RATE, as "10/hour"), so a deployment or a
test changes it without touching DRF's cached settings. The counts are kept in Django's cache, the
shared Redis wherever several web processes serve (leaderboard/web/gunicorn_conf.py insists), so
they hold across processes. A throttled request is a 429 with Retry-After, which costs one
increment in the cache.
"""

from __future__ import annotations

import time

from django.conf import settings
from rest_framework.throttling import UserRateThrottle

from leaderboard.web.client_address import client_address

REFUSAL_DELAY_SECONDS = 1.0


class SettingsRateThrottle(UserRateThrottle):
    """A per-user throttle whose rate is read from the setting named by `setting`, counted
    atomically in the shared cache: at most the rate's number of requests in each window of its
    period (an hour for "30/hour"), however many processes serve them at once."""

    setting = ""
    # Set by SimpleRateThrottle.__init__ from the rate (parse_rate), which the stubs leave out;
    # numbers whenever there is a rate, the only case that reads them.
    num_requests: int
    duration: int

    def get_rate(self) -> str:
        return getattr(settings, self.setting)

    def allow_request(self, request, view) -> bool:
        # DRF's own throttle reads the request history, then writes it back: requests served at
        # once by several processes each read the same history, and each race let one more
        # through (6 of 12 concurrent downloads at a rate of 5). An increment in the cache
        # (Redis INCR) counts each request exactly once.
        if self.rate is None or (ident := self.get_cache_key(request, view)) is None:
            return True
        self.now = self.timer()
        window = int(self.now // self.duration)
        self.window_ends = (window + 1) * self.duration
        key = f"{ident}:{window}:{self.num_requests}/{self.duration}"
        try:
            count = self.cache.incr(key)
        except ValueError:  # the window's first request, unless another came in between
            count = 1 if self.cache.add(key, 1, self.duration) else self.cache.incr(key)
        return count <= self.num_requests

    def wait(self) -> float:
        """Seconds until the window ends and the count starts again."""
        return max(self.window_ends - self.now, 1.0)

    # DRF's own may give None too (no REMOTE_ADDR); the stubs say str.
    def get_ident(self, request) -> str | None:  # type: ignore[override]
        """An anonymous request's address: the site's one rule, not DRF's reading of a
        client-sent X-Forwarded-For."""
        return client_address(request)


class SubmissionThrottle(SettingsRateThrottle):
    scope = "submissions"
    setting = "SPECBOARD_SUBMISSION_RATE"


class ImportThrottle(SettingsRateThrottle):
    scope = "imports"
    setting = "SPECBOARD_IMPORT_RATE"


class UploadThrottle(SettingsRateThrottle):
    scope = "uploads"
    setting = "SPECBOARD_IMPORT_RATE"


class AnonymousExportThrottle(SettingsRateThrottle):
    """Downloads per address for visitors not signed in; a signed-in user is not counted. A
    refusal is answered after REFUSAL_DELAY_SECONDS: a client that ignores Retry-After and asks
    again at once is then answered once a second per connection, holding a web thread idle
    (gunicorn_conf's threads), not as fast as the CPU the other visitors' pages need allows."""

    scope = "anonymous-exports"
    setting = "SPECBOARD_ANONYMOUS_EXPORT_RATE"

    def allow_request(self, request, view) -> bool:
        if super().allow_request(request, view):
            return True
        time.sleep(REFUSAL_DELAY_SECONDS)
        return False

    def get_cache_key(self, request, view) -> str | None:
        if request.user and request.user.is_authenticated:
            return None
        return super().get_cache_key(request, view)
