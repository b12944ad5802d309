"""The site's pages, the API under /api/v1/ and the admin."""

from urllib.parse import unquote

from allauth.account import views as allauth_views
from django.contrib import admin
from django.urls import include, path, register_converter
from django.views.generic import RedirectView

# The API's routes register the `id` converter (digits that fit a 64-bit integer), which the
# pages use too: /runs/99999999999999999999999/ is a 404 before any query is made.
from leaderboard.api import urls as api_urls
from leaderboard.views import (
    answers,
    board,
    configs,
    hosts,
    jobs,
    model_requests,
    protocols,
    submit,
)


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
    path("", board.leaderboard, name="leaderboard"),
    path("configs/<config_key:key>/", configs.config_detail, name="config"),
    path("runs/<id:run_id>/", configs.run_detail, name="run"),
    path("runs/<id:run_id>/requests.csv", configs.run_requests_csv, name="run-requests-csv"),
    path("runs/<id:run_id>/requests.json", configs.run_requests_json, name="run-requests-json"),
    path("nmax/", answers.nmax, name="nmax"),
    path("context/", answers.context, name="context"),
    path("concurrency/", protocols.concurrency, name="concurrency"),
    path("categories/", protocols.categories, name="categories"),
    path("compare/", answers.compare, name="compare"),
    path("hardware/", answers.hardware_list, name="hardware-list"),
    path("hardware/<slug:slug>/", answers.hardware_detail, name="hardware"),
    path("models/", answers.model_list, name="model-list"),
    path("models/<model_name:name>/", answers.model_detail, name="model"),
    path("best/", answers.best_config, name="best"),
    path("submit/", submit.submit, name="submit"),
    path("submit/estimate", submit.submit_estimate, name="submit-estimate"),
    path("jobs/", jobs.my_jobs, name="my-jobs"),
    # Not under /models/: a model may be named "request" (/models/<name>/ is its page).
    path("model-requests/", model_requests.model_requests, name="model-requests"),
    path("jobs/<id:job_id>/", jobs.job_detail, name="job"),
    path("jobs/<id:job_id>/cancel/", jobs.job_cancel, name="job-cancel"),
    path("hosts/", hosts.hosts, name="hosts"),
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
