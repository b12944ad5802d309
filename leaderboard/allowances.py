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
from django.db.models import Count, Q, Sum
from django.utils import timezone

from leaderboard.models import Job

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


def allowance(*, user: AbstractBaseUser) -> Allowance:
    """The user's limits and what is left, from the jobs they submitted: one pass over their
    jobs of the last day (or of the rate's period, if longer) on the `job_owner_recent` index,
    each job's tokens fixed when it was submitted (`Job.total_tokens`)."""
    limit, period = parse_rate(settings.SPECBOARD_SUBMISSION_RATE)
    now = timezone.now()
    since_period = now - timedelta(seconds=period)
    since_day = now - DAY
    used = Job.objects.filter(
        owner_id=user.pk, auto_scheduled=False, created_at__gte=min(since_period, since_day)
    ).aggregate(
        recent=Count("pk", filter=Q(created_at__gte=since_period)),
        today=Sum("total_tokens", filter=Q(created_at__gte=since_day), default=0),
    )
    recent, today = used["recent"], used["today"]
    return Allowance(
        submissions_limit=limit,
        submissions_period_s=period,
        submissions_left=max(limit - recent, 0),
        job_tokens_limit=settings.SPECBOARD_MAX_JOB_TOKENS,
        daily_tokens_limit=settings.SPECBOARD_DAILY_TOKENS,
        daily_tokens_left=max(settings.SPECBOARD_DAILY_TOKENS - today, 0),
    )
