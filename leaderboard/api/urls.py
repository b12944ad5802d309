"""The API's routes under /api/v1/: its root, one path per resource, a JSON 404 for the rest."""

from typing import cast

from django.conf import settings
from django.urls import path, re_path, register_converter
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from leaderboard.api.errors import not_found
from leaderboard.api.views import board, catalogue, hosts, jobs, runs, submissions
from leaderboard.api.views.drafts import Drafts
from leaderboard.api.views.models import ModelRequestListCreate
from leaderboard.api.views.protocols import Concurrency
from leaderboard.api.views.root import ApiRoot


class IdConverter:
    """A database id: digits that fit a 64-bit integer; anything else is a JSON 404."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")

# Swagger UI sets inline styles; scripts stay our own files (the split view serves its init script).
# The site's policy is a dict of source lists (django-stubs types the setting as dict[str, object]).
site_policy = cast("dict[str, list[str]]", settings.SECURE_CSP)
docs_view = csp_override(site_policy | {"style-src": [CSP.SELF, CSP.UNSAFE_INLINE]})(
    SpectacularSwaggerSplitView.as_view(url_name="api-schema")
)

urlpatterns = [
    path("", ApiRoot.as_view(), name="api-root"),
    path("models", catalogue.ModelListCreate.as_view(), name="api-models"),
    path("model-requests", ModelRequestListCreate.as_view(), name="api-model-requests"),
    path("hardware", catalogue.HardwareList.as_view(), name="api-hardware"),
    path("builds", catalogue.BuildList.as_view(), name="api-builds"),
    re_path(
        r"^builds/(?P<release>[A-Za-z0-9._-]{1,64})/retire$",
        catalogue.BuildRetire.as_view(),
        name="api-build-retire",
    ),
    path("configs", catalogue.ConfigList.as_view(), name="api-configs"),
    re_path(
        r"^configs/(?P<key>[A-Za-z0-9_-]{1,64})$",
        catalogue.ConfigDetail.as_view(),
        name="api-config",
    ),
    path("compare", board.Compare.as_view(), name="api-compare"),
    path("leaderboard", board.LeaderboardList.as_view(), name="api-leaderboard"),
    path("concurrency", Concurrency.as_view(), name="api-concurrency"),
    path("drafts", Drafts.as_view(), name="api-drafts"),
    path("runs", runs.RunList.as_view(), name="api-runs"),
    path("runs/<id:pk>", runs.RunDetail.as_view(), name="api-run"),
    path("submissions", submissions.SubmissionListCreate.as_view(), name="api-submissions"),
    path("allowance", submissions.AllowanceDetail.as_view(), name="api-allowance"),
    path("jobs/<id:pk>", jobs.JobDetail.as_view(), name="api-job"),
    path("jobs/<id:pk>/cancel", jobs.JobCancel.as_view(), name="api-job-cancel"),
    path("hosts", hosts.HostList.as_view(), name="api-hosts"),
    path("imports", submissions.ImportCreate.as_view(), name="api-imports"),
    path("uploads", submissions.UploadCreate.as_view(), name="api-uploads"),
    path(
        "exports/leaderboard.csv", board.LeaderboardCsv.as_view(), name="api-export-leaderboard-csv"
    ),
    path(
        "exports/leaderboard.json",
        board.LeaderboardJson.as_view(),
        name="api-export-leaderboard-json",
    ),
    path(
        "exports/runs/<id:pk>/requests.csv",
        runs.RunRequestsCsv.as_view(),
        name="api-export-requests-csv",
    ),
    path(
        "exports/runs/<id:pk>/requests.json",
        runs.RunRequestsJson.as_view(),
        name="api-export-requests-json",
    ),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", docs_view, name="api-docs"),
    re_path(r"^(?P<unmatched>[\s\S]*)$", not_found, name="api-not-found"),
]
