"""The site's pages, the API under /api/v1/ and the admin."""

from urllib.parse import unquote

from allauth.account import views as allauth_views
from django.contrib import admin
from django.urls import include, path, register_converter
from django.views.generic import RedirectView

from leaderboard import host_views, protocol_views, submit_views, views

# The API's routes register the `id` converter (digits that fit a 64-bit integer), which the
# pages use too: /runs/99999999999999999999999/ is a 404 before any query is made.
from leaderboard.api import urls as api_urls
from leaderboard.model_request_views import model_requests


class ModelNameConverter:
    """A target model's name, which may hold slashes ("Qwen/Qwen3-8B"): /models/Qwen/Qwen3-8B/.

    Names are free text from imports and uploads. A path segment "." or ".." would be resolved
    away by the browser, so those segments are percent-escaped, and so is every "%" (a name may
    hold one), which `to_python` undoes; names without either read as themselves."""

    regex = ".+"

    def to_python(self, value: str) -> str:
        return unquote(value)

    def to_url(self, value: str) -> str:
        segments = value.replace("%", "%25").split("/")
        return "/".join(
            segment.replace(".", "%2E") if segment in (".", "..") else segment
            for segment in segments
        )


class ConfigKeyConverter:
    """A config key: the runner's 16 hex digits, or another short key of the same alphabet."""

    regex = "[A-Za-z0-9_-]{1,64}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(ModelNameConverter, "model_name")
register_converter(ConfigKeyConverter, "config_key")

urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("configs/<config_key:key>/", views.config_detail, name="config"),
    path("runs/<id:run_id>/", views.run_detail, name="run"),
    path("runs/<id:run_id>/requests.csv", views.run_requests_csv, name="run-requests-csv"),
    path("runs/<id:run_id>/requests.json", views.run_requests_json, name="run-requests-json"),
    path("nmax/", views.nmax, name="nmax"),
    path("context/", views.context, name="context"),
    path("concurrency/", protocol_views.concurrency, name="concurrency"),
    path("categories/", protocol_views.categories, name="categories"),
    path("compare/", views.compare, name="compare"),
    path("hardware/", views.hardware_list, name="hardware-list"),
    path("hardware/<slug:slug>/", views.hardware_detail, name="hardware"),
    path("models/", views.model_list, name="model-list"),
    path("models/<model_name:name>/", views.model_detail, name="model"),
    path("best/", views.best_config, name="best"),
    path("submit/", submit_views.submit, name="submit"),
    path("submit/estimate", submit_views.submit_estimate, name="submit-estimate"),
    path("jobs/", views.my_jobs, name="my-jobs"),
    # Not under /models/: a model may be named "request" (/models/<name>/ is its page).
    path("model-requests/", model_requests, name="model-requests"),
    path("jobs/<id:job_id>/", views.job_detail, name="job"),
    path("jobs/<id:job_id>/cancel/", views.job_cancel, name="job-cancel"),
    path("hosts/", host_views.hosts, name="hosts"),
    # allauth's sign-in and sign-out under the names the templates have always used, then all of
    # allauth's pages (sign-up, email confirmation, password change and reset, providers).
    path("accounts/login/", allauth_views.login, name="login"),
    path("accounts/logout/", allauth_views.logout, name="logout"),
    path("accounts/", include("allauth.urls")),
    path("account/", include("leaderboard.accounts.urls")),
    path("api/v1/", include(api_urls)),
    path("api/", RedirectView.as_view(pattern_name="api-root"), name="api-unversioned"),
    path("admin/", admin.site.urls),
]
