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
    # The columns the page shows, read as values down the tok/s index (entry_rank_tps): an
    # index lookup, no model instances.
    rows = (
        LeaderboardEntry.objects.filter(retired=False)
        .order_by(F("tokens_per_second").desc(nulls_last=True), "id")
        .values(
            "spec_label",  # the row's own (migration 0026), as its config's
            config_key=F("config__key"),
            label=F("config__label"),
            config_target=F("config__target_name"),
            hardware_slug=F("hardware__slug"),
            release=F("engine_release"),
            tps=F("tokens_per_second"),
            runs=F("runs_count"),
        )[:50]
    )
    return JsonResponse(
        {
            "results": [
                {
                    "config": row["config_key"],
                    "label": row["label"],
                    "target_name": row["config_target"],
                    "spec_label": row["spec_label"],
                    "hardware": row["hardware_slug"],
                    "engine_release": row["release"],
                    "tokens_per_second": row["tps"],
                    "runs_count": row["runs"],
                }
                for row in rows
            ]
        }
    )


urlpatterns = [
    path("bench/aggregated-leaderboard", aggregated_leaderboard),
    path("bench/maintained-leaderboard", maintained_leaderboard),
    path("", include("leaderboard.urls")),
]
