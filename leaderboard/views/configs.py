"""A config's page (its runs and rows, its one best run and that run's figures), a run's page and
its per-request downloads as CSV and JSON."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from leaderboard import exports, selectors


@require_safe
def config_detail(request: HttpRequest, key: str) -> HttpResponse:
    config = selectors.config_by_key(key=key)
    if config is None:
        raise Http404("no such config")
    return render(
        request,
        "leaderboard/config_detail.html",
        {"config": config} | selectors.config_page(config=config),
    )


@require_safe
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_by_id(run_id=run_id)
    if run is None:
        raise Http404("no such run")
    return render(
        request, "leaderboard/run_detail.html", {"run": run} | selectors.run_page(run=run)
    )


@require_safe
def run_requests_csv(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_by_id(run_id=run_id)
    if run is None:
        raise Http404("no such run")
    return exports.csv_response(
        selectors.request_records(run=run),
        selectors.REQUEST_EXPORT_FIELDS,
        f"run-{run.pk}-requests.csv",
    )


@require_safe
def run_requests_json(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_by_id(run_id=run_id)
    if run is None:
        raise Http404("no such run")
    body = {
        "run": run.pk,
        "config_key": run.config.key,
        "hardware": run.hardware.slug,
        "engine_release": run.engine_release,
        "tokens_per_second_definition": run.tps_definition,
        "provenance": run.provenance,
        "requests": selectors.request_records(run=run),
    }
    return exports.json_response(body, f"run-{run.pk}-requests.json")
