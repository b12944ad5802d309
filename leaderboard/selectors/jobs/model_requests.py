"""Reads of the users' requests for Hugging Face models (services.hub_models writes them)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from leaderboard.models import ModelRequest


def user_model_requests(*, user: User) -> QuerySet[ModelRequest]:
    """A user's own model requests, newest first, with the model an approval registered."""
    return ModelRequest.objects.filter(requester=user).select_related("model")
