"""The site's URLs, plus two uncached first pages for the side-by-side comparison.

Both return the same 50 rows in the same shape: one read from the maintained LeaderboardEntry
rows, one aggregated from every run at read time (GROUP BY). Neither uses the page cache.
"""

from django.db.models import F
from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from leaderboard import selectors
from leaderboard.models import LeaderboardEntry


def aggregated_leaderboard(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"results": selectors.leaderboard_from_runs(limit=50)})


def maintained_leaderboard(request: HttpRequest) -> JsonResponse:
    entries = (
        LeaderboardEntry.objects.filter(retired=False)
        .select_related("config", "hardware")
        .order_by(F("tokens_per_second").desc(nulls_last=True), "id")[:50]
    )
    return JsonResponse(
        {
            "results": [
                {
                    "config": entry.config.key,
                    "label": entry.config.label,
                    "target_name": entry.config.target_name,
                    "spec_label": entry.config.spec_label,
                    "hardware": entry.hardware.slug,
                    "engine_release": entry.engine_release,
                    "tokens_per_second": entry.tokens_per_second,
                    "runs_count": entry.runs_count,
                }
                for entry in entries
            ]
        }
    )


urlpatterns = [
    path("bench/aggregated-leaderboard", aggregated_leaderboard),
    path("bench/maintained-leaderboard", maintained_leaderboard),
    path("", include("leaderboard.urls")),
]
