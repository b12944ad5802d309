"""The account page: the user's API tokens (make one, its key shown once; revoke one), their jobs
and what is left of their allowance. Sign-up, sign-in and passwords are allauth's pages.

A new token's key is shown in the answer to the POST that made it, the one exception to
redirect-after-POST here: a redirect would have to keep the key somewhere for the next GET (it
sat in the session, on the server, until then), and only its sha256 is ever stored. The answer
is never cached; reloading it asks the browser to send the form again, which makes a new token.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from leaderboard import selectors as site_selectors
from leaderboard.accounts import selectors, services
from leaderboard.accounts.forms import TokenCreateForm
from leaderboard.accounts.signed_in import SignedInRequest
from leaderboard.forms import add_service_errors

RECENT_JOBS = 5


@never_cache
@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def account(request: SignedInRequest) -> HttpResponse:
    form = TokenCreateForm(request.POST or None)
    issued = None
    if request.method == "POST" and form.is_valid():
        try:
            issued = services.issue_api_token(user=request.user, name=form.cleaned_data["name"])
        except services.TokenError as refusal:
            add_service_errors(form, refusal)
        else:
            form = TokenCreateForm()
    tokens = selectors.user_tokens(user=request.user)
    jobs = site_selectors.user_jobs(user=request.user)
    return render(
        request,
        "account/account.html",
        {
            "form": form,
            "new_key": issued.key if issued else None,
            "new_token": issued.token if issued else None,
            "tokens": tokens,
            "recent_jobs": jobs[:RECENT_JOBS],
            "job_count": jobs.count(),
            "allowance": site_selectors.allowance(user=request.user),
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def revoke_token(request: SignedInRequest, token_id: int) -> HttpResponse:
    token = selectors.user_tokens(user=request.user).filter(id=token_id).first()
    if token is None:
        raise Http404
    if services.revoke_api_token(token_id=token.id, user=request.user):
        messages.success(request, f"Token “{token.name}” ({token.prefix}…) is revoked.")
    else:
        messages.info(request, f"Token “{token.name}” was already revoked.")
    return redirect("account")
