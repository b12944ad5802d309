"""The site's URLs, plus the leaderboard's first page aggregated from runs at read time."""

from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from leaderboard import selectors


def aggregated_leaderboard(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"results": selectors.leaderboard_from_runs(limit=50)})


urlpatterns = [
    path("bench/aggregated-leaderboard", aggregated_leaderboard),
    path("", include("leaderboard.urls")),
]
