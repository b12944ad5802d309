"""A config's page (its rows and a page of its runs, its one best run and that run's figures), a
run's page (a page of its requests) and its per-request downloads as CSV and JSON.

Both pages are kept whole until the board changes (`leaderboard.web.page_cache`); what computing
one costs is bounded: a hundred runs or requests a page. The downloads are rendered once per run
and kept (`exports.kept`), and held to a rate per address for visitors not signed in
(`exports.throttled`)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from leaderboard import exports, selectors
from leaderboard.models import Run
from leaderboard.selectors.evidence.outcomes import baseline_noise, run_noise
from leaderboard.web import page_cache
from leaderboard.web.query import whole_number

RUNS_PAGE_SIZE = 100
REQUESTS_PAGE_SIZE = 100
CONFIG_TEMPLATE = "leaderboard/_config_detail.html"
RUN_TEMPLATE = "leaderboard/_run_detail.html"


def _page_number(request: HttpRequest, name: str) -> int:
    return whole_number(request.GET.get(name, ""), max_digits=18) or 1


def _page_param(name: str) -> page_cache.Params:
    """What a page of runs or requests reads of its query: its page number."""

    def params(query: QueryDict) -> dict[str, int]:
        number = whole_number(query.get(name, ""), max_digits=18) or 1
        return {name: number} if number > 1 else {}

    return params


@require_safe
@page_cache.cached_page(_page_param("runs_page"))
def config_detail(request: HttpRequest, key: str) -> HttpResponse:
    config = selectors.config_by_key(key=key)
    if config is None:
        raise Http404("no such config")
    page = selectors.config_page(
        config=config, runs_page=_page_number(request, "runs_page"), page_size=RUNS_PAGE_SIZE
    )
    body = render_to_string(CONFIG_TEMPLATE, {"config": config} | page)
    response = render(
        request, "leaderboard/config_detail.html", {"label": config.label, "body": mark_safe(body)}
    )
    kept = page["runs_page"].number == _page_number(request, "runs_page")
    return page_cache.shows(response, rankings=None, kept=kept)


@require_safe
@page_cache.cached_page(_page_param("requests_page"))
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_by_id(run_id=run_id)
    if run is None:
        raise Http404("no such run")
    page = selectors.run_page(
        run=run,
        requests_page=_page_number(request, "requests_page"),
        page_size=REQUESTS_PAGE_SIZE,
    )
    body = render_to_string(
        RUN_TEMPLATE,
        {"run": run, "noise": run_noise(run=run), "baseline": baseline_noise(run=run)} | page,
    )
    response = render(
        request,
        "leaderboard/run_detail.html",
        {"run_id": run_id, "body": mark_safe(body), "charts": page["spread"] is not None},
    )
    kept = page["requests_page"].number == _page_number(request, "requests_page")
    return page_cache.shows(response, rankings=None, kept=kept)


@require_safe
@exports.throttled
def run_requests_csv(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_by_id(run_id=run_id)
    if run is None:
        raise Http404("no such run")
    # A run's records never change: the download is rendered once (leaderboard.exports.kept).
    return exports.kept(
        f"run-requests-csv:{run.pk}",
        lambda: exports.csv_response(
            selectors.request_records(run=run),
            selectors.REQUEST_EXPORT_FIELDS,
            f"run-{run.pk}-requests.csv",
        ),
    )


@require_safe
@exports.throttled
def run_requests_json(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_by_id(run_id=run_id)
    if run is None:
        raise Http404("no such run")
    return exports.kept(f"run-requests-json:{run.pk}", lambda: _run_requests_json(run))


def _run_requests_json(run: Run) -> HttpResponse:
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
