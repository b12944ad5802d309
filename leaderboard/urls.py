from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from leaderboard import views

urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("configs/<str:key>/", views.config_detail, name="config"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/requests.csv", views.run_requests_csv, name="run-requests-csv"),
    path("runs/<int:run_id>/requests.json", views.run_requests_json, name="run-requests-json"),
    path("nmax/", views.nmax, name="nmax"),
    path("context/", views.context, name="context"),
    path("compare/", views.compare, name="compare"),
    path("hardware/", views.hardware_list, name="hardware-list"),
    path("hardware/<slug:slug>/", views.hardware_detail, name="hardware"),
    path("models/", views.model_list, name="model-list"),
    path("models/<str:name>/", views.model_detail, name="model"),
    path("best/", views.best_config, name="best"),
    path("submit/", views.submit, name="submit"),
    path("jobs/", views.my_jobs, name="my-jobs"),
    path("jobs/<int:job_id>/", views.job_detail, name="job"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel, name="job-cancel"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", include("leaderboard.api.urls")),
    path("admin/", admin.site.urls),
]
