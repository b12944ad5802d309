"""A config's page (its rows and a page of its runs, its one best run and that run's figures), a
run's page (a page of its requests) and its per-request downloads as CSV and JSON.

Both pages are rendered once per change of the board and served from the page cache until then,
as the front page is; only the site header around them is rendered per request, and a page
served so costs no query. What a miss costs is bounded too: a hundred runs or requests a page, and
the figures read from a run's stored result computed once (`selectors.run_figures`). The
downloads are rendered once per run and kept (`exports.kept`), and held to a rate per address for
visitors not signed in (`exports.throttled`)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from leaderboard import exports, selectors
from leaderboard.models import Run
from leaderboard.query import whole_number
from leaderboard.selectors.outcomes import baseline_noise, run_noise

RUNS_PAGE_SIZE = 100
REQUESTS_PAGE_SIZE = 100
CONFIG_TEMPLATE = "leaderboard/_config_detail.html"
RUN_TEMPLATE = "leaderboard/_run_detail.html"


def _page_number(request: HttpRequest, name: str) -> int:
    return whole_number(request.GET.get(name, ""), max_digits=18) or 1


@require_safe
def config_detail(request: HttpRequest, key: str) -> HttpResponse:
    # A page served from the cache costs no query: what it depends on is cached too.
    view = selectors.config_page_key(
        key=key, runs_page=_page_number(request, "runs_page"), page_size=RUNS_PAGE_SIZE
    )
    if view is None:
        raise Http404("no such config")
    body = selectors.board_cached(
        "config-page", view, lambda: _config_html(key=key, runs_page=view["runs_page"])
    )
    return render(
        request, "leaderboard/config_detail.html", {"label": view["label"], "body": mark_safe(body)}
    )


def _config_html(*, key: str, runs_page: int) -> str:
    config = selectors.config_by_key(key=key)
    if config is None:
        raise Http404("no such config")
    page = selectors.config_page(config=config, runs_page=runs_page, page_size=RUNS_PAGE_SIZE)
    return render_to_string(CONFIG_TEMPLATE, {"config": config} | page)


@require_safe
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    # A page served from the cache costs no query: what it depends on is cached too.
    view = selectors.run_page_key(
        run_id=run_id,
        requests_page=_page_number(request, "requests_page"),
        page_size=REQUESTS_PAGE_SIZE,
    )
    if view is None:
        raise Http404("no such run")
    shown = selectors.board_cached(
        "run-page", view, lambda: _run_html(run_id=run_id, requests_page=view["requests_page"])
    )
    return render(
        request,
        "leaderboard/run_detail.html",
        {"run_id": run_id, "body": mark_safe(shown["body"]), "charts": shown["charts"]},
    )


def _run_html(*, run_id: int, requests_page: int) -> dict:
    run = selectors.run_by_id(run_id=run_id)
    if run is None:
        raise Http404("no such run")
    page = selectors.run_page(run=run, requests_page=requests_page, page_size=REQUESTS_PAGE_SIZE)
    return {
        "body": render_to_string(
            RUN_TEMPLATE,
            {"run": run, "noise": run_noise(run=run), "baseline": baseline_noise(run=run)} | page,
        ),
        "charts": page["spread"] is not None,
    }


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
