from django.conf import settings
from django.urls import path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from leaderboard.api import views

# Swagger UI sets inline styles; scripts stay our own files (the split view serves its init script).
docs_view = csp_override(settings.SECURE_CSP | {"style-src": [CSP.SELF, CSP.UNSAFE_INLINE]})(
    SpectacularSwaggerSplitView.as_view(url_name="api-schema")
)

urlpatterns = [
    path("models", views.ModelList.as_view(), name="api-models"),
    path("hardware", views.HardwareList.as_view(), name="api-hardware"),
    path("configs", views.ConfigList.as_view(), name="api-configs"),
    path("configs/<str:key>", views.ConfigDetail.as_view(), name="api-config"),
    path("leaderboard", views.LeaderboardList.as_view(), name="api-leaderboard"),
    path("runs", views.RunList.as_view(), name="api-runs"),
    path("runs/<int:pk>", views.RunDetail.as_view(), name="api-run"),
    path("submissions", views.SubmissionListCreate.as_view(), name="api-submissions"),
    path("jobs/<int:pk>", views.JobDetail.as_view(), name="api-job"),
    path("jobs/<int:pk>/cancel", views.JobCancel.as_view(), name="api-job-cancel"),
    path("imports", views.ImportCreate.as_view(), name="api-imports"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", docs_view, name="api-docs"),
]
