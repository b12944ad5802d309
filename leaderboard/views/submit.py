"""The submit page and its live estimate.

`submit` shows the form (filled in from a preset, or from a stored config for "run this again")
and queues what it validated; `submit_estimate` answers the page's script as the user types:
the token budget and GPU time of what the form holds now (`selectors.submission_cost`), or the
real validator's field errors, with the user's allowance. Both read the same `SubmitForm`, so
the estimate cannot disagree with what submitting would do.
"""

from __future__ import annotations

import re
from typing import Any, NotRequired, TypedDict

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST
from pydantic import ValidationError

from leaderboard import selectors, services
from leaderboard.accounts.signed_in import SignedInRequest
from leaderboard.forms import SubmitForm, add_service_errors, initial_from_config, threads_help
from leaderboard.models import Config, Hardware, ModelFile
from leaderboard.presets import (
    FITTED_FIELDS,
    PRESETS,
    PROTOCOL_FORM_FIELDS,
    fitted_defaults,
    protocol_defaults,
)
from runner.config import DFLASH_MAX_N_MAX, MAX_N_MAX, BenchmarkConfig

ESTIMATE_TEMPLATE = "leaderboard/_submit_estimate.html"
# What ?from= and ?hardware= may hold to be looked up (a config key, a hardware slug).
_QUERY_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
_QUERY_SLUG = re.compile(r"[-a-zA-Z0-9_]{1,100}")


class Rerun(TypedDict):
    """What the page says of "run this again": the key asked for, and its config and the values
    the form could not take from it, once found."""

    key: str
    problem: str
    config: NotRequired[Config]
    lost: NotRequired[list[str]]


@login_required
def submit(request: SignedInRequest) -> HttpResponse:
    rerun: Rerun | None = None
    offer = selectors.submit_offer()
    if request.method == "POST":
        form = SubmitForm(request.POST, offer=offer)
        if form.is_valid():
            # The form validated the config once, in its clean(): queue what it validated.
            assert form.submission is not None  # a valid form holds its validated config
            try:
                job = services.queue_submission(owner=request.user, submission=form.submission)
            except services.LimitReached as refusal:
                add_service_errors(form, refusal)
            else:
                # The page's script takes this away once the job leaves the queue.
                messages.success(request, f"Job {job.pk} is queued.", extra_tags="job-queued")
                return redirect("job", job_id=job.pk)
        estimate_form = form
    else:
        form, rerun = _form_from_query(request, offer)
        estimate_form = SubmitForm(form.initial_data(), offer=offer, preset=form.preset)
    estimate = submission_estimate(form=estimate_form, user=request.user)
    return render(
        request,
        "leaderboard/submit.html",
        {
            "form": form,
            "layout": form.layout(),
            "presets": [
                {
                    "name": preset.name,
                    "label": preset.label,
                    "description": preset.description(),
                    "available": preset.available,
                    "active": preset.name == form.preset and rerun is None,
                }
                for preset in PRESETS
            ],
            "script_data": _script_data(form),
            "allowance": selectors.allowance(user=request.user),
            "estimate": estimate,
            "rerun": rerun,
        },
    )


def _form_from_query(
    request: HttpRequest, offer: selectors.SubmitOffer
) -> tuple[SubmitForm, Rerun | None]:
    """The form for ?preset=NAME, or for ?from=KEY (a stored config, "run this again"), with
    ?hardware=SLUG chosen when it is served."""
    preset = request.GET.get("preset", "quick")
    initial: dict[str, Any] = {}
    rerun: Rerun | None = None
    key = request.GET.get("from", "")[:64]
    if key:
        # Only a key of the keys' alphabet is looked up: PostgreSQL refuses a NUL in a query.
        config = selectors.config_by_key(key=key) if _QUERY_KEY.fullmatch(key) else None
        if config is None:
            rerun = {"key": key, "problem": f"There is no config with key {key!r}."}
        else:
            source = selectors.rerun_source(config=config)
            rerun = {"key": key, "config": config, "problem": source.problem, "lost": []}
            if source.config is not None:
                initial, rerun["lost"] = initial_from_config(source.config)
                # a rerun keeps the config's threads (none: the engine's default), not the host's
                # advice, so that it submits the same config
                initial.setdefault("threads", source.config.threads)
                preset = initial["protocol"]
    hardware = request.GET.get("hardware", "")
    if hardware and _QUERY_SLUG.fullmatch(hardware):
        _, served = selectors.submission_models(target_path=None, hardware_slug=hardware)
        if served is not None:
            initial["hardware"] = hardware
    return SubmitForm(initial=initial, offer=offer, preset=preset), rerun


def _script_data(form: SubmitForm) -> dict:
    """What submit.js needs: the presets' values, the fields of each protocol, the pairs that
    cannot run, n_max's bounds and where to ask for an estimate."""
    return {
        "presets": {
            preset.name: {
                name: form.fields[name].prepare_value(value)
                for name, value in preset.values().items()
            }
            for preset in PRESETS
            if preset.available
        },
        "protocol_fields": PROTOCOL_FORM_FIELDS,
        # Per target, the protocols whose defaults its training context changes, fitted to it:
        # a preset or protocol chosen with that target starts from these.
        "fitted": {
            target: fitted
            for target, context_length in form.training_contexts.items()
            if (fitted := _fitted_defaults(form, context_length))
        },
        # Every protocol's own defaults, with or without a preset: a protocol chosen from the
        # list starts from them.
        "protocol_defaults": {
            name: {
                field: form.fields[field].prepare_value(value)
                for field, value in protocol_defaults(name).items()
            }
            for name in PROTOCOL_FORM_FIELDS
        },
        # Per host, the threads the form starts from and why: the script follows the chosen host.
        "threads_kept": "threads" in form.initial,
        "threads": {
            slug: {"threads": advice.threads, "help": threads_help(advice.reason)}
            for slug, advice in form.threads_advice.items()
        },
        "compatibility": selectors.draft_compatibility(),
        "n_max": {"max": MAX_N_MAX, "dflash_max": DFLASH_MAX_N_MAX},
        "estimate_url": reverse("submit-estimate"),
    }


def _fitted_defaults(form: SubmitForm, context_length: int | None) -> dict[str, dict]:
    """The protocols' form values fitted to a training context, where they differ from the
    defaults, as the form's fields write them."""
    found = {}
    for name in FITTED_FIELDS:
        fitted = fitted_defaults(name, context_length=context_length)
        if fitted != protocol_defaults(name):
            found[name] = {
                field: form.fields[field].prepare_value(value) for field, value in fitted.items()
            }
    return found


@require_POST
def submit_estimate(request: HttpRequest) -> JsonResponse:
    """The token budget, GPU time and allowance of what the form holds, or its field errors."""
    if not request.user.is_authenticated:
        return JsonResponse({"detail": "Sign in to submit a config."}, status=403)
    form = SubmitForm(request.POST, offer=selectors.submit_offer())
    estimate = submission_estimate(form=form, user=request.user)
    html = render_to_string(ESTIMATE_TEMPLATE, {"estimate": estimate}, request=request)
    return JsonResponse(estimate | {"html": html})


def submission_estimate(*, form: SubmitForm, user: User) -> dict:
    """Validate the form with the real validator and say what submitting it would cost
    (`selectors.submission_cost`) and whether the user's allowance would take it."""
    valid = form.is_valid()
    config = form.submission.config if form.submission else _schema_config(form)
    target, hardware = _target_and_hardware(form)
    cost = selectors.submission_cost(
        config=config,
        # While the rest of the form is refused, the protocol's own cost is still worth showing.
        protocol_config=None if config else _protocol_config(form),
        target=target,
        hardware=hardware,
    )
    refusal = ""
    if valid and config is not None:
        try:
            services.check_allowance(user=user, config=config)
        except services.LimitReached as limit:
            refusal = limit.errors["non_field_errors"][0]
    return (
        {"valid": valid and not refusal, "errors": _field_errors(form)}
        | cost
        | {"refusal": refusal, "allowance": selectors.allowance(user=user).as_dict()}
    )


def _field_errors(form: SubmitForm) -> list[dict[str, str]]:
    """The form's errors as the page's script shows them: each with its field and label ("" for
    an error of the whole form)."""
    return [
        {
            "field": name if name in form.fields else "",
            "label": str(form.fields[name].label or name) if name in form.fields else "",
            "message": str(message),
        }
        for name, messages_ in form.errors.items()
        for message in messages_
    ]


def _protocol_fields_valid(form: SubmitForm) -> bool:
    """Whether the form's protocol fields passed: a budget of numbers the user did not give
    (a refused field falls back to its default) would mislead."""
    protocol_fields = {"protocol", *(f for fs in PROTOCOL_FORM_FIELDS.values() for f in fs)}
    return hasattr(form, "cleaned_data") and not protocol_fields & set(form.errors)


def _schema_config(form: SubmitForm) -> BenchmarkConfig | None:
    """The config the form describes when only the registry's model checks refused it."""
    if not _protocol_fields_valid(form):
        return None
    try:
        return BenchmarkConfig.model_validate(form.config_data())
    except ValidationError:
        return None


def _protocol_config(form: SubmitForm) -> BenchmarkConfig | None:
    """The chosen target with the form's protocol and nothing else: what the protocol costs."""
    if not _protocol_fields_valid(form):
        return None
    try:
        return BenchmarkConfig.model_validate(
            {
                "target_model": form.cleaned_data.get("target_model"),
                "protocol": form.config_data()["protocol"],
            }
        )
    except ValidationError:
        return None


def _target_and_hardware(form: SubmitForm) -> tuple[ModelFile | None, Hardware | None]:
    """The target and hardware the form names: the validated submission's, or the registered
    ones its cleaned fields name."""
    if form.submission is not None:
        return form.submission.target, form.submission.hardware
    data = getattr(form, "cleaned_data", {})
    return selectors.submission_models(
        target_path=data.get("target_model"), hardware_slug=data.get("hardware")
    )
