"""What a user may still ask of the GPUs: submissions an hour and tokens a day, per job and per user.

Counted from the jobs in the database, so every web process and worker sees the same count (a
per-process cache counted each of three web workers alone). The submit form and the API call the
same check; a refusal says the limit, what is left and when the next slot opens.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from leaderboard.models import Job
from leaderboard.services.errors import ServiceError
from runner.config import BenchmarkConfig, parse_config
from runner.errors import ConfigError
from runner.protocols import job_token_budget

PERIODS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
DAY = timedelta(days=1)


class LimitReached(ServiceError):
    """A submission over the user's rate or token allowance; nothing was created."""

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__({"non_field_errors": [message]})
        self.retry_after_s = retry_after_s


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
        config = parse_config(canonical)
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


def check_allowance(*, user: AbstractBaseUser, config: BenchmarkConfig) -> None:
    """Raise LimitReached if this config is over the user's rate or token allowance."""
    left = allowance(user=user)
    tokens = job_token_budget(config)["total_tokens"]
    if left.submissions_left <= 0:
        oldest = (
            Job.objects.filter(
                owner=user,
                auto_scheduled=False,
                created_at__gte=timezone.now() - timedelta(seconds=left.submissions_period_s),
            )
            .order_by("created_at")
            .values_list("created_at", flat=True)
            .first()
        )
        wait = left.submissions_period_s
        if oldest is not None:
            elapsed = (timezone.now() - oldest).total_seconds()
            wait = max(int(left.submissions_period_s - elapsed) + 1, 1)
        raise LimitReached(
            f"you have used your {left.submissions_limit} submissions for this period; "
            f"the next one is possible in {wait} s",
            retry_after_s=wait,
        )
    if tokens > left.job_tokens_limit:
        raise LimitReached(
            f"this config needs {tokens:,} tokens, above the {left.job_tokens_limit:,} one job "
            "may use; run fewer or shorter requests",
            retry_after_s=0,
        )
    if tokens > left.daily_tokens_left:
        raise LimitReached(
            f"this config needs {tokens:,} tokens and {left.daily_tokens_left:,} of your "
            f"{left.daily_tokens_limit:,} tokens a day are left",
            retry_after_s=int(DAY.total_seconds()),
        )
