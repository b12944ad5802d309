"""The request a signed-in view receives, as the type checker sees it: behind `login_required` or
the admin site its user is an account, never the anonymous one."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest


class SignedInRequest(HttpRequest):
    """An `HttpRequest` whose `user` is signed in (for annotations only; Django makes the
    request)."""

    user: User
