"""Pages: small function views that call selectors for reads and services for writes."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from leaderboard import selectors, services
from leaderboard.forms import SubmitForm
from leaderboard.models import Job

FILTERS = ("target", "hardware", "spec_type", "protocol", "source", "ordering")


@require_GET
def leaderboard(request: HttpRequest) -> HttpResponse:
    choices = selectors.leaderboard_filter_choices()
    filters = {name: request.GET.get(name, "") for name in FILTERS}
    filters = {
        name: value if value in dict(choices[name]) else "" for name, value in filters.items()
    }
    entries = selectors.leaderboard_entries(
        target=filters["target"],
        hardware=filters["hardware"],
        spec_type=filters["spec_type"],
        protocol=filters["protocol"],
        source=filters["source"] or "all",
        ordering=filters["ordering"] or "tokens_per_second",
    )
    page = Paginator(entries, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "leaderboard/leaderboard.html",
        {"page": page, "choices": choices, "filters": filters, "query": query.urlencode()},
    )


@require_GET
def config_detail(request: HttpRequest, key: str) -> HttpResponse:
    config = selectors.config_by_key(key=key)
    if config is None:
        raise Http404("no such config")
    runs = list(selectors.config_runs(config=config))
    best = max(runs, key=lambda r: r.tokens_per_second or 0.0) if runs else None
    return render(
        request,
        "leaderboard/config_detail.html",
        {
            "config": config,
            "entries": selectors.config_entries(config=config),
            "runs": runs,
            "provenance_run": best,
            "chart": selectors.config_chart_data(runs=runs),
        },
    )


@login_required
def submit(request: HttpRequest) -> HttpResponse:
    form = SubmitForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = services.submit_config(
                owner=request.user,
                data=form.config_data(),
                hardware_slug=form.cleaned_data["hardware"],
            )
        except services.SubmissionError as error:
            for message in (m for messages_ in error.errors.values() for m in messages_):
                form.add_error(None, message)
        else:
            messages.success(request, f"Job {job.pk} is queued.")
            return redirect("job", job_id=job.pk)
    return render(request, "leaderboard/submit.html", {"form": form})


def _job_or_404(job_id: int) -> Job:
    job = selectors.job_by_id(job_id=job_id)
    if job is None:
        raise Http404("no such job")
    return job


@require_GET
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job_or_404(job_id)
    return render(
        request,
        "leaderboard/job.html",
        {
            "job": job,
            "status": selectors.job_status(job=job),
            "can_cancel": job.is_active and (request.user == job.owner or request.user.is_staff),
        },
    )


@login_required
@require_POST
def job_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job_or_404(job_id)
    if services.cancel_job(job=job, user=request.user):
        messages.success(request, "The job is cancelled.")
    else:
        messages.info(request, "The job had already finished.")
    return redirect("job", job_id=job.pk)


@login_required
@require_GET
def my_jobs(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.user_jobs(user=request.user), 50).get_page(request.GET.get("page"))
    return render(request, "leaderboard/my_jobs.html", {"page": page})
