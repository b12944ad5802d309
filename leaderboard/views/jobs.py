"""A job's page (its status, progress and place in the queue), cancelling it, and a user's jobs."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from leaderboard import selectors, services
from leaderboard.accounts.signed_in import SignedInRequest
from leaderboard.models import Job
from leaderboard.selectors.evidence.outcomes import baseline_noise, run_noise, run_speedup


def _job_or_404(job_id: int) -> Job:
    job = selectors.job_by_id(job_id=job_id)
    if job is None:
        raise Http404("no such job")
    return job


@require_safe
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job_or_404(job_id)
    # The one reading GET /api/v1/jobs/<id> shows too: its status and progress, while queued
    # where it stands in its hardware's queue and when it should start, while running its time
    # left.
    report = selectors.job_report(job=job)
    run = job.run if report["run_id"] else None
    return render(
        request,
        "leaderboard/job.html",
        {
            "job": job,
            "status": report,
            "can_cancel": job.is_active and (request.user == job.owner or request.user.is_staff),
            # A finished job's verdicts: noisy or not and why, and its speedup.
            "noise": run_noise(run=run) if run else None,
            "speedup": run_speedup(run=run) if run else None,
            "baseline": baseline_noise(run=run) if run else None,
        },
    )


@login_required
@require_POST
def job_cancel(request: SignedInRequest, job_id: int) -> HttpResponse:
    job = _job_or_404(job_id)
    if services.cancel_job(job=job, user=request.user):
        messages.success(request, "The job is cancelled.")
    else:
        messages.info(request, "The job had already finished.")
    return redirect("job", job_id=job.pk)


@login_required
@require_safe
def my_jobs(request: SignedInRequest) -> HttpResponse:
    page = Paginator(selectors.user_jobs(user=request.user), 50).get_page(request.GET.get("page"))
    rows = [{"job": job, **selectors.job_cost(job=job)} for job in page.object_list]
    return render(request, "leaderboard/my_jobs.html", {"page": page, "rows": rows})
