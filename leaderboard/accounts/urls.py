"""The account page's routes (mounted at /account/ by leaderboard.urls)."""

from django.urls import path

from leaderboard.accounts import views

urlpatterns = [
    path("", views.account, name="account"),
    path("tokens/<id:token_id>/revoke/", views.revoke_token, name="account-token-revoke"),
]
