"""Whether a user's allowance covers a new submission: submissions an hour and tokens a day, per
job and per user.

The allowance itself is a read (`leaderboard.allowances`, shown by `selectors.allowance`); the
submit form and the API call the same check, under the submission's lock, and a refusal says the
limit, what is left and when the next slot opens.
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from leaderboard.allowances import DAY, allowance
from leaderboard.models import Job
from leaderboard.services.errors import ServiceError
from runner.config import BenchmarkConfig
from runner.protocols import job_token_budget


class LimitReached(ServiceError):
    """A submission over the user's rate or token allowance; nothing was created."""

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__({"non_field_errors": [message]})
        self.retry_after_s = retry_after_s


def check_allowance(*, user: User, config: BenchmarkConfig) -> int:
    """Raise LimitReached if this config is over the user's rate or token allowance; else the
    tokens it will cost (its job's `total_tokens`)."""
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
    return tokens
