"""The model-request page: a signed-in user asks for a Hugging Face model and sees the answers.

Writes go through services.hub_models.request_model; admins approve or refuse in the admin.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render

from leaderboard import selectors, services
from leaderboard.accounts.signed_in import SignedInRequest
from leaderboard.forms import ModelRequestForm, add_service_errors


@login_required
def model_requests(request: SignedInRequest) -> HttpResponse:
    """Ask for a model (POST) and list your requests with their state (GET)."""
    form = ModelRequestForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            created = services.request_model(requester=request.user, **form.cleaned_data)
        except services.ServiceError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Asked for {created}: an admin will decide.")
            return redirect("model-requests")
    requests = selectors.user_model_requests(user=request.user)[:100]
    return render(
        request, "leaderboard/model_requests.html", {"form": form, "model_requests": requests}
    )
