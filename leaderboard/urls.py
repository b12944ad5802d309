from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from leaderboard import views

urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("configs/<str:key>/", views.config_detail, name="config"),
    path("submit/", views.submit, name="submit"),
    path("jobs/", views.my_jobs, name="my-jobs"),
    path("jobs/<int:job_id>/", views.job_detail, name="job"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel, name="job-cancel"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", include("leaderboard.api.urls")),
    path("admin/", admin.site.urls),
]
