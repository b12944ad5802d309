"""The pages that answer a question from the board: the best n_max (/nmax/), speed against
context depth (/context/), configs side by side (/compare/), the best config for a GPU or a
memory size (/best/), and the hardware and model lists and pages (GPUs compared for a target,
which draft for a target)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from leaderboard import selectors
from leaderboard.forms import BestConfigForm, CompareForm
from leaderboard.views.board import PAGE_SIZE
from leaderboard.web import page_cache

# How many rankings' answers /best/ shows at most.
BEST_ANSWERS = 12


def _pair_params(query: QueryDict) -> dict[str, str]:
    """What a page of one target and hardware reads of its query."""
    return {name: value for name in ("target", "hardware") if (value := query.get(name))}


@require_safe
@page_cache.cached_page(_pair_params)
def nmax(request: HttpRequest) -> HttpResponse:
    choices = selectors.nmax_choices()
    target = request.GET.get("target", "")
    hardware = request.GET.get("hardware", "")
    kept = True
    if choices["first"] and not selectors.has_nmax_sweep(
        target_name=target, hardware_slug=hardware
    ):
        # No sweep there (or nothing asked): the widest one.
        target, hardware = choices["first"]
        kept = not request.GET.get("target") and not request.GET.get("hardware")
    sweep = selectors.nmax_sweep(target_name=target, hardware_slug=hardware) if target else None
    response = render(
        request,
        "leaderboard/nmax.html",
        {
            "targets": [(t, t) for t in choices["targets"]],
            "hardware_choices": choices["hardware"],
            "target": target,
            "hardware": hardware,
            "sweep": sweep,
        },
    )
    return page_cache.shows(response, rankings=None, kept=kept)


@require_safe
@page_cache.cached_page(_pair_params)
def context(request: HttpRequest) -> HttpResponse:
    choices = selectors.leaderboard_filter_choices()
    target = request.GET.get("target", "")
    hardware = request.GET.get("hardware", "")
    target = target if target in dict(choices["target"]) else ""
    hardware = hardware if hardware in dict(choices["hardware"]) else ""
    response = render(
        request,
        "leaderboard/context.html",
        {"choices": choices, "target": target, "hardware": hardware}
        | selectors.context_page(target_name=target, hardware_slug=hardware),
    )
    asked = (request.GET.get("target", ""), request.GET.get("hardware", ""))
    return page_cache.shows(response, rankings=None, kept=asked == (target, hardware))


# How many configs the compare page's picker offers boxes for (selectors.answers.compare's most).
PICKER_SLOTS = 4


@require_safe
def compare(request: HttpRequest) -> HttpResponse:
    choices = selectors.compare_choices()
    picks = request.GET.getlist("config")
    picker_error = ""
    if any(pick.strip() for pick in picks):
        # What was picked or typed in the searchable boxes, as keys in the page's address.
        try:
            keys = selectors.picked_keys(picks=picks, choices=choices)
        except selectors.ComparisonRefused as refusal:
            picker_error = refusal.message
        else:
            return redirect(f"{reverse('compare')}?{urlencode({'keys': ','.join(keys)})}")
    form = CompareForm(None if picker_error else request.GET or None)
    result = None
    if form.is_bound and form.is_valid():
        try:
            result = selectors.compare_configs(keys=form.cleaned_data["keys"])
        except selectors.ComparisonRefused as refusal:
            form.add_error("keys", refusal.message)
    if picker_error:
        slots = [pick.strip() for pick in picks]
    else:
        labels = {choice["key"]: choice["label"] for choice in choices}
        wanted = selectors.requested_keys(request.GET.get("keys", ""))
        slots = [labels.get(key, key) for key in wanted]
    slots = (slots + [""] * PICKER_SLOTS)[:PICKER_SLOTS]
    return render(
        request,
        "leaderboard/compare.html",
        {
            "form": form,
            "result": result,
            "legend": selectors.LEGEND,
            "choices": choices,
            "slots": slots,
            "picker_error": picker_error,
        },
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
@page_cache.cached_page()
def hardware_detail(request: HttpRequest, slug: str) -> HttpResponse:
    hardware = selectors.hardware_by_slug(slug=slug)
    if hardware is None:
        raise Http404("no such hardware")
    rows = selectors.ranked_rows(
        selectors.leaderboard_entries(hardware=slug, ranked_only=True), limit=PAGE_SIZE
    )
    response = render(
        request, "leaderboard/hardware_detail.html", {"hardware": hardware, "rows": rows}
    )
    return page_cache.shows(response, rankings=None)


@require_safe
@page_cache.cached_page()
def model_list(request: HttpRequest) -> HttpResponse:
    response = render(
        request, "leaderboard/model_list.html", {"targets": selectors.target_summaries()}
    )
    return page_cache.shows(response, rankings=None)


@require_safe
@page_cache.cached_page()
def model_detail(request: HttpRequest, name: str) -> HttpResponse:
    if "\x00" in name:
        # No stored name holds a NUL character (imports refuse them), and PostgreSQL cannot
        # even compare against one.
        raise Http404("no results for this model")
    entries = selectors.leaderboard_entries(target=name, ranked_only=True)
    if not selectors.leaderboard_entries(target=name, include_retired=True).exists():
        raise Http404("no results for this model")
    rows = selectors.ranked_rows(entries, limit=PAGE_SIZE)
    response = render(
        request,
        "leaderboard/model_detail.html",
        {"name": name, "rows": rows, "drafts": selectors.draft_advice(target_name=name)},
    )
    return page_cache.shows(response, rankings=None)


@require_safe
def best_config(request: HttpRequest) -> HttpResponse:
    # The targets and GPU kinds on the board change only with its row set.
    targets, hardware = page_cache.kept_while_row_set_holds(
        "best-choices",
        lambda: ([t["name"] for t in selectors.target_summaries()], selectors.hardware_summaries()),
    )
    form = BestConfigForm(request.GET or None, targets=targets, hardware=hardware)
    answers, more = None, 0
    if form.is_bound and form.is_valid():
        answers = selectors.best_config_for(
            target_name=form.cleaned_data["target"],
            memory_bytes=form.memory_bytes(),
            hardware=form.cleaned_data.get("hardware_row"),
            gpu_count=form.gpus(),
        )
        # One answer per ranking: without a GPU chosen, the fastest answers first, the rest
        # counted (a page of a hundred sections answers nobody).
        more = max(0, len(answers) - BEST_ANSWERS)
        answers = answers[:BEST_ANSWERS]
    return render(
        request, "leaderboard/best.html", {"form": form, "answers": answers, "more": more}
    )
