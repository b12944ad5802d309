"""What a user may still ask of the GPUs, read from the jobs they submitted: submissions in the
rate's period and tokens today, against the deployment's limits.

Counted from the jobs in the database, so every web process and worker sees the same count (a
per-process cache counted each of three web workers alone). A read that both sides need: the
pages and the API show it (`selectors.allowance`), and the submission service checks a new
config against it under its lock (`services.limits.check_allowance`); it lives here, outside
both packages, because selectors import no services and services no selectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from leaderboard.models import Job
from runner.config import parse_stored_config
from runner.errors import ConfigError
from runner.protocols import job_token_budget

PERIODS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
DAY = timedelta(days=1)


@dataclass(frozen=True)
class Allowance:
    """A user's limits and what is left of them now."""

    submissions_limit: int
    submissions_period_s: int
    submissions_left: int
    job_tokens_limit: int
    daily_tokens_limit: int
    daily_tokens_left: int

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def parse_rate(rate: str) -> tuple[int, int]:
    """'30/hour' as (30, 3600)."""
    count, _, period = rate.partition("/")
    return int(count), PERIODS[period.strip().rstrip("s")]


def _job_tokens(canonical: dict) -> int:
    try:
        config = parse_stored_config(canonical)
    except ConfigError:
        return 0
    return job_token_budget(config)["total_tokens"]


def allowance(*, user: AbstractBaseUser) -> Allowance:
    """The user's limits and what is left, from the jobs they submitted."""
    limit, period = parse_rate(settings.SPECBOARD_SUBMISSION_RATE)
    now = timezone.now()
    mine = Job.objects.filter(owner=user, auto_scheduled=False)
    recent = mine.filter(created_at__gte=now - timedelta(seconds=period)).count()
    today = sum(
        _job_tokens(canonical)
        for canonical in mine.filter(created_at__gte=now - DAY).values_list(
            "config__canonical", flat=True
        )
    )
    return Allowance(
        submissions_limit=limit,
        submissions_period_s=period,
        submissions_left=max(limit - recent, 0),
        job_tokens_limit=settings.SPECBOARD_MAX_JOB_TOKENS,
        daily_tokens_limit=settings.SPECBOARD_DAILY_TOKENS,
        daily_tokens_left=max(settings.SPECBOARD_DAILY_TOKENS - today, 0),
    )
