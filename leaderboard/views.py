"""Pages: small function views that call selectors for reads and services for writes."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST, require_safe

from leaderboard import exports, selectors, services
from leaderboard.forms import BestConfigForm, CompareForm
from leaderboard.models import Job

FILTERS = ("target", "hardware", "spec_type", "protocol", "source", "ordering")
PAGE_SIZE = 50
# How many rankings' answers /best/ shows at most.
BEST_ANSWERS = 12


@require_safe
def leaderboard(request: HttpRequest) -> HttpResponse:
    choices = selectors.leaderboard_filter_choices()
    filters = {name: request.GET.get(name, "") for name in FILTERS}
    filters = {
        name: value if value in dict(choices[name]) else "" for name, value in filters.items()
    }
    page_number = request.GET.get("page", "")
    view = {
        "filters": filters,
        # NUL cannot reach PostgreSQL in a query; a search term is plain text.
        "search": request.GET.get("q", "").replace("\x00", "").strip()[:100],
        "include_all": request.GET.get("all") == "1",
        "page": int(page_number) if page_number.isdigit() else 1,
    }
    # The board (filters, table, pager) is rendered once per change of the leaderboard rows and
    # served from the cache until then; only the site header around it is rendered per request.
    board = selectors.board_cached(
        "leaderboard-page", view, lambda: _leaderboard_board(view=view, choices=choices)
    )
    return render(request, "leaderboard/leaderboard.html", {"board": mark_safe(board)})


def _leaderboard_board(*, view: dict, choices: dict) -> str:
    """The leaderboard's filters, ranked page and kept-off rows as HTML, from validated input."""
    filters, search, include_all = view["filters"], view["search"], view["include_all"]
    selection = {
        "target": filters["target"],
        "hardware": filters["hardware"],
        "spec_type": filters["spec_type"],
        "protocol": filters["protocol"],
        "source": filters["source"] or "all",
        "search": search,
    }
    ordering = filters["ordering"] or "tokens_per_second"
    entries = selectors.leaderboard_entries(
        **selection, ordering=ordering, ranked_only=not include_all, include_retired=include_all
    )
    page = selectors.BoardPaginator(entries, PAGE_SIZE).get_page(view["page"])
    newest = selectors.newest_release_number()
    page_entries = list(page.object_list)
    ranks = selectors.page_ranks(
        entries, page_entries, offset=page.start_index() - 1, ordering=ordering
    )
    rows = selectors.leaderboard_rows(
        entries=page_entries,
        ranks=ranks,
        newest=newest,
        ordering=ordering,
        definitions=selectors.board_definitions(entries),
    )
    kept_off = (
        []
        if include_all
        else selectors.leaderboard_rows(
            entries=list(
                selectors.leaderboard_entries(**selection, include_retired=True).exclude(
                    selectors.RANKED
                )[:PAGE_SIZE]
            ),
            ranks={},
            newest=newest,
        )
    )
    # The denominators of the page's rankings: each ranking's baseline, shown apart.
    # The denominators of the page's rankings (or, with no ranked row, every baseline the
    # filters match: "speculative type: none" asks for them), shown apart.
    denominators = (
        selectors.baseline_rows(rankings=[e.ranking_key for e in page_entries])
        if page_entries
        else list(
            selectors.leaderboard_entries(**selection, ranked_only=True, baselines=True)[:PAGE_SIZE]
        )
    )
    baselines = (
        []
        if include_all
        else selectors.leaderboard_rows(entries=denominators, ranks={}, newest=newest)
    )
    query = QueryDict(mutable=True)
    query.update({name: value for name, value in filters.items() if value})
    if search:
        query["q"] = search
    toggle = query.copy()
    if include_all:
        query["all"] = "1"
    else:
        toggle["all"] = "1"
    return render_to_string(
        "leaderboard/_leaderboard_board.html",
        {
            "page": page,
            "rows": rows,
            "kept_off": kept_off,
            "baselines": baselines,
            "include_all": include_all,
            "search": search,
            "choices": choices,
            "filters": filters,
            "query": query.urlencode(),
            "toggle_query": toggle.urlencode(),
            # Speedup by config for the selected target and hardware (ranked rows only).
            "speedup_chart": selectors.speedup_chart(
                target=filters["target"],
                hardware=filters["hardware"],
                spec_type=filters["spec_type"],
                protocol=filters["protocol"],
            ),
        },
    )


@require_safe
def config_detail(request: HttpRequest, key: str) -> HttpResponse:
    config = selectors.config_by_key(key=key)
    if config is None:
        raise Http404("no such config")
    runs = list(selectors.config_runs(config=config))
    entries = list(selectors.config_entries(config=config))
    newest = selectors.newest_release_number()
    top = selectors.best_entry(config=config)
    # The one best run (the verdicts' rule, stored on the row); a config without a row yet has
    # none, and the page says so.
    best = next((run for run in runs if top is not None and run.pk == top.best_run_id), None)
    memory = (
        selectors.memory_tradeoff(target_name=config.target_name, hardware=top.hardware)
        if top is not None and config.is_speculative
        else []
    )
    acceptance = selectors.acceptance_by_position(run=best)
    return render(
        request,
        "leaderboard/config_detail.html",
        {
            # The concurrency and categories protocols' figures (None for other protocols).
            "concurrency": selectors.concurrency_view(entry=top),
            "categories": selectors.category_view(entry=top),
            "energy": selectors.energy_figures(best.raw_result) if best else None,
            "config": config,
            "entries": selectors.leaderboard_rows(entries=entries, ranks={}, newest=newest),
            "runs": runs,
            "provenance_run": best,
            "chart": selectors.config_chart_data(runs=runs),
            "acceptance": {"positions": list(range(1, len(acceptance) + 1)), "rate": acceptance},
            "spread": selectors.acceptance_spread(run=best),
            "memory": {"points": memory, "highlight": config.key},
            "memory_hardware": top.hardware if top else None,
            # "Run this again": the form filled in, or why this site cannot run it.
            "rerun": selectors.rerun_source(config=config),
        },
    )


@require_safe
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_by_id(run_id=run_id)
    if run is None:
        raise Http404("no such run")
    labels = selectors.point_labels(run=run)
    records = [
        record | {"point_label": labels.get(record["point"])}
        for record in selectors.request_records(run=run)
    ]
    return render(
        request,
        "leaderboard/run_detail.html",
        {
            "run": run,
            "records": records,
            "energy": selectors.energy_figures(run.raw_result),
            "spread": selectors.acceptance_spread(run=run),
            "stale": selectors.is_stale(run.engine_release, selectors.newest_release_number()),
        },
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


@require_safe
def nmax(request: HttpRequest) -> HttpResponse:
    pairs = selectors.nmax_targets()
    target = request.GET.get("target", "")
    hardware = request.GET.get("hardware", "")
    if (target, hardware) not in {(t, h) for t, h, _ in pairs} and pairs:
        target, hardware = "", ""
    if not target and pairs:
        target, hardware = pairs[0][0], pairs[0][1]
    sweep = selectors.nmax_sweep(target_name=target, hardware_slug=hardware) if target else None
    return render(
        request,
        "leaderboard/nmax.html",
        {
            "pairs": pairs,
            "targets": sorted({t for t, _, _ in pairs}),
            "hardware_choices": sorted({(h, name) for _, h, name in pairs}),
            "target": target,
            "hardware": hardware,
            "sweep": sweep,
        },
    )


@require_safe
def context(request: HttpRequest) -> HttpResponse:
    choices = selectors.leaderboard_filter_choices()
    target = request.GET.get("target", "")
    hardware = request.GET.get("hardware", "")
    target = target if target in dict(choices["target"]) else ""
    hardware = hardware if hardware in dict(choices["hardware"]) else ""
    lines = selectors.context_series(target_name=target, hardware_slug=hardware)
    depths = sorted({depth for line in lines for depth in line["depths"]})
    figures = ("speedup", "tokens_per_second", "ci95_low", "ci95_high", "n")
    for line in lines:
        by_depth = {
            depth: {name: line[name][index] for name in figures}
            for index, depth in enumerate(line["depths"])
        }
        line["cells"] = [by_depth.get(depth) for depth in depths]
    return render(
        request,
        "leaderboard/context.html",
        {
            "choices": choices,
            "target": target,
            "hardware": hardware,
            "lines": lines,
            "depths": depths,
            "chart": {"depths": depths, "lines": lines},
        },
    )


@require_safe
def compare(request: HttpRequest) -> HttpResponse:
    form = CompareForm(request.GET or None)
    result = None
    if form.is_bound and form.is_valid():
        try:
            result = selectors.compare_configs(keys=form.cleaned_data["keys"])
        except selectors.ComparisonRefused as refusal:
            form.add_error("keys", refusal.message)
    return render(
        request,
        "leaderboard/compare.html",
        {"form": form, "result": result, "legend": selectors.LEGEND},
    )


@require_safe
def hardware_list(request: HttpRequest) -> HttpResponse:
    # The GPUs compared for one target and protocol; unknown choices fall back to the widest.
    comparison = selectors.hardware_comparison_for(
        target=request.GET.get("target", ""), protocol=request.GET.get("protocol", "")
    )
    return render(
        request,
        "leaderboard/hardware_list.html",
        {"hardware": selectors.hardware_summaries(), "comparison": comparison},
    )


@require_safe
def hardware_detail(request: HttpRequest, slug: str) -> HttpResponse:
    hardware = selectors.hardware_by_slug(slug=slug)
    if hardware is None:
        raise Http404("no such hardware")
    rows = selectors.ranked_rows(
        selectors.leaderboard_entries(hardware=slug, ranked_only=True), limit=PAGE_SIZE
    )
    return render(request, "leaderboard/hardware_detail.html", {"hardware": hardware, "rows": rows})


@require_safe
def model_list(request: HttpRequest) -> HttpResponse:
    return render(request, "leaderboard/model_list.html", {"targets": selectors.target_summaries()})


@require_safe
def model_detail(request: HttpRequest, name: str) -> HttpResponse:
    if "\x00" in name:
        # No stored name holds a NUL character (imports refuse them), and PostgreSQL cannot
        # even compare against one.
        raise Http404("no results for this model")
    entries = selectors.leaderboard_entries(target=name, ranked_only=True)
    if not selectors.leaderboard_entries(target=name, include_retired=True).exists():
        raise Http404("no results for this model")
    rows = selectors.ranked_rows(entries, limit=PAGE_SIZE)
    return render(
        request,
        "leaderboard/model_detail.html",
        {"name": name, "rows": rows, "drafts": selectors.draft_advice(target_name=name)},
    )


@require_safe
def best_config(request: HttpRequest) -> HttpResponse:
    form = BestConfigForm(request.GET or None)
    answers, more = None, 0
    if form.is_bound and form.is_valid():
        answers = selectors.best_config_for(
            target_name=form.cleaned_data["target"],
            memory_bytes=form.memory_bytes(),
            hardware=form.cleaned_data.get("hardware_row"),
        )
        # One answer per ranking: without a GPU chosen, the fastest answers first, the rest
        # counted (a page of a hundred sections answers nobody).
        more = max(0, len(answers) - BEST_ANSWERS)
        answers = answers[:BEST_ANSWERS]
    return render(
        request, "leaderboard/best.html", {"form": form, "answers": answers, "more": more}
    )


def _job_or_404(job_id: int) -> Job:
    job = selectors.job_by_id(job_id=job_id)
    if job is None:
        raise Http404("no such job")
    return job


@require_safe
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job_or_404(job_id)
    status = selectors.job_status(job=job)
    return render(
        request,
        "leaderboard/job.html",
        {
            "job": job,
            "status": status,
            "remaining_s": selectors.job_remaining_seconds(status=status),
            # Where a queued job stands in its hardware's queue and when it should start.
            "standing": selectors.queue_standing(job=job),
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
@require_safe
def my_jobs(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.user_jobs(user=request.user), 50).get_page(request.GET.get("page"))
    rows = [{"job": job, **selectors.job_cost(job=job)} for job in page.object_list]
    return render(request, "leaderboard/my_jobs.html", {"page": page, "rows": rows})
