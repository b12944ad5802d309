"""Specboard's web service: submissions, Celery workers and the best-average leaderboard."""

from leaderboard.messaging.celery import app as celery_app

__all__ = ["celery_app"]
