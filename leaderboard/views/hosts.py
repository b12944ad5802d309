"""The /hosts/ page: the GPU hosts serving each hardware kind, and each kind's queue.

A small function view over `selectors.host_board`; the API's `GET /api/v1/hosts` reads the same.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from leaderboard import selectors


@require_safe
def hosts(request: HttpRequest) -> HttpResponse:
    board = selectors.host_board(workers=selectors.cached_live_workers())
    return render(request, "leaderboard/hosts.html", {"board": board})
